#include "interpreter/node_repl_kernel.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "interpreter/resources.hpp"

namespace cove::interpreter {
namespace {

constexpr std::string_view kDriverResource = "node/repl.js";

std::string_view driver_source() {
  for (const auto& r : resources()) {
    if (r.path == kDriverResource) return r.content;
  }
  throw KernelError("the node REPL driver is missing from this agent build");
}

// Written to a temporary name and renamed, so a kernel starting at the same moment never reads
// a half-written driver.
std::string install_driver(const std::string& runtime_dir) {
  std::string path = runtime_dir + "/repl.js";
  std::string temp = path + ".tmp." + std::to_string(::getpid()) + "." +
                     std::to_string(reinterpret_cast<uintptr_t>(&runtime_dir));
  std::string_view source = driver_source();
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(source.data(), static_cast<std::streamsize>(source.size()));
    if (!out) throw KernelError("cannot write " + temp);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    throw KernelError("cannot write " + path);
  }
  return path;
}

}  // namespace

NodeReplKernel::NodeReplKernel(KernelLaunch launch, KernelServices services)
    : ReplKernel(std::move(launch), std::move(services)) {
  if (launch_.language != "javascript" && launch_.language != "typescript") {
    throw KernelError("the node kernel runs javascript or typescript, not " + launch_.language);
  }
}

ReplProcessSpec NodeReplKernel::prepare() {
  ReplProcessSpec spec;
  spec.argv = {"node", install_driver(launch_.runtime_dir), launch_.language};
  spec.env = launch_.env;
  spec.cwd = launch_.cwd;
  spec.requests_on_stdin = false;
  spec.requests_fd = 3;
  spec.replies_fd = 4;
  return spec;
}

std::string NodeReplKernel::cell_request(int64_t id, const std::string& code, bool silent) {
  nlohmann::json request = {{"id", id}, {"code", code}, {"silent", silent}};
  // Invalid UTF-8 in a cell becomes U+FFFD rather than an exception.
  return request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

ReplKernel::Reply NodeReplKernel::parse_reply(const std::string& line) {
  Reply reply;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) return reply;
  auto text = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::string type = j["type"];
  if (auto it = j.find("id"); it != j.end() && it->is_number_integer()) reply.id = it->get<int64_t>();
  if (type == "ready") {
    reply.kind = Reply::Kind::ready;
  } else if (type == "fatal") {
    reply.kind = Reply::Kind::fatal;
    reply.message = text("message");
  } else if (type == "result" && j.contains("data") && j["data"].is_object()) {
    reply.kind = Reply::Kind::result;
    reply.data = j["data"];
  } else if (type == "error") {
    reply.kind = Reply::Kind::error;
    reply.error = ExecutionFailed{text("name"), text("value"), text("traceback")};
  } else if (type == "done") {
    reply.kind = Reply::Kind::done;
  }
  return reply;
}

}  // namespace cove::interpreter
