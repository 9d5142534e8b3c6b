#include "interpreter/execution_output.hpp"

#include "interpreter/ndjson.hpp"
#include "interpreter/result_mapping.hpp"

namespace cove::interpreter {
namespace {

using Json = nlohmann::ordered_json;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace

std::string error_line(const std::string& name, const std::string& value, const std::string& traceback) {
  Json line;
  line["type"] = "error";
  line["name"] = name;
  line["value"] = value;
  line["traceback"] = traceback;
  return ndjson_line(line);
}

std::string end_of_execution_line() { return ndjson_line(Json{{"type", "end_of_execution"}}); }

std::string keepalive_line() { return ndjson_line(Json{{"type", "keepalive"}}); }

std::string unexpected_end_line() {
  return error_line("UnexpectedEndOfExecution",
                    "Connection to the execution was closed before the execution was finished");
}

std::vector<std::string> lines_for_event(const ExecutionEvent& event) {
  return std::visit(
      Overloaded{
          [](const ExecutionStarted& e) -> std::vector<std::string> {
            Json line;
            line["type"] = "number_of_executions";
            line["execution_count"] = e.execution_count;
            return {ndjson_line(line)};
          },
          [](const StreamOutput& e) -> std::vector<std::string> {
            if (e.text.empty()) return {};
            Json line;
            line["type"] = e.is_stderr ? "stderr" : "stdout";
            line["text"] = e.text;
            line["timestamp"] = e.timestamp;
            return {ndjson_line(line)};
          },
          [](const DisplayOutput& e) -> std::vector<std::string> {
            return {ndjson_line(result_line(e.data, e.is_main_result))};
          },
          [](const ExecutionFailed& e) -> std::vector<std::string> {
            return {error_line(e.name, e.value, e.traceback)};
          },
          [](const ExecutionFinished& e) -> std::vector<std::string> {
            switch (e.status) {
              case ExecutionFinished::Status::ok:
                return {};
              case ExecutionFinished::Status::aborted:
                return {error_line("ExecutionAborted", "Execution was aborted")};
              case ExecutionFinished::Status::restarting:
                return {error_line("ContextRestarting", "Context was restarted")};
              case ExecutionFinished::Status::lost:
                // E2B sends a WebSocketError first, but the client keeps only the last one and an
                // execution carries at most one error line.
                return {unexpected_end_line()};
            }
            return {};
          },
      },
      event);
}

}  // namespace cove::interpreter
