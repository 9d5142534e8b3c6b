#pragma once
// Kernel execution events → the NDJSON lines of E2B's /execute stream (the vocabulary of
// code-interpreter.md §2). The stream itself (keepalives, the final end_of_execution) is the
// server's; this is the pure mapping, unit-tested line by line.
#include <string>
#include <vector>

#include "interpreter/kernel.hpp"

namespace cove::interpreter {

// Zero or more complete lines (each ending in '\n') for one event.
std::vector<std::string> lines_for_event(const ExecutionEvent& event);

std::string end_of_execution_line();
std::string keepalive_line();
// Written when the stream ends without the kernel finishing the cell.
std::string unexpected_end_line();
// A failure before the cell reached the kernel (e.g. the kernel could not be restarted).
std::string error_line(const std::string& name, const std::string& value, const std::string& traceback = "");

}  // namespace cove::interpreter
