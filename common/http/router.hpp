#pragma once
// Method + exact-path routing for the REST endpoints (Connect paths go through rpc::ConnectRouter).
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "http/exchange.hpp"

namespace cove::http {

class Router {
 public:
  using Fn = std::function<net::awaitable<void>(Exchange&)>;
  enum class Match { found, wrong_method, none };

  void add(std::string method, std::string path, Fn fn) {
    routes_[std::move(path)][std::move(method)] = std::move(fn);
  }

  const Fn* match(std::string_view method, std::string_view path, Match& result) const {
    auto p = routes_.find(path);
    if (p == routes_.end()) {
      result = Match::none;
      return nullptr;
    }
    auto m = p->second.find(method);
    if (m == p->second.end()) {
      result = Match::wrong_method;
      return nullptr;
    }
    result = Match::found;
    return &m->second;
  }

 private:
  std::map<std::string, std::map<std::string, Fn, std::less<>>, std::less<>> routes_;
};

}  // namespace cove::http
