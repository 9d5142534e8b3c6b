#include <gtest/gtest.h>

#include <tuple>

#include "api/routes.hpp"

namespace cove::shim::api {
namespace {
using Kind = RouteMatch::Kind;

TEST(Routes, ImplementedEndpoints) {
  struct Case {
    const char *method, *path;
    Endpoint endpoint;
  };
  for (const auto& c : std::vector<Case>{
           {"GET", "/health", Endpoint::health},
           {"POST", "/sandboxes", Endpoint::create_v1},
           {"POST", "/v2/sandboxes", Endpoint::create_v2},
           {"GET", "/sandboxes", Endpoint::list_v1},
           {"GET", "/v2/sandboxes", Endpoint::list_v2},
           {"GET", "/sandboxes/abc", Endpoint::get},
           {"DELETE", "/sandboxes/abc", Endpoint::kill},
           {"POST", "/sandboxes/abc/connect", Endpoint::connect_v1},
           {"POST", "/v2/sandboxes/abc/connect", Endpoint::connect_v2},
           {"POST", "/sandboxes/abc/timeout", Endpoint::set_timeout},
           {"POST", "/sandboxes/abc/refreshes", Endpoint::refresh},
           {"GET", "/sandboxes/abc/metrics", Endpoint::metrics},
           {"GET", "/sandboxes/metrics", Endpoint::metrics_many},
           {"GET", "/templates", Endpoint::templates},
           {"GET", "/templates/aliases/base", Endpoint::template_alias},
           {"POST", "/sandboxes/abc/pause", Endpoint::pause},
           {"POST", "/sandboxes/abc/resume", Endpoint::resume},
           {"POST", "/sandboxes/abc/fork", Endpoint::fork},
           {"POST", "/sandboxes/abc/snapshots", Endpoint::snapshot_create},
           {"GET", "/snapshots", Endpoint::snapshots_list},
       }) {
    auto m = match_route(c.method, c.path);
    EXPECT_EQ(m.kind, Kind::found) << c.method << " " << c.path;
    EXPECT_EQ(m.endpoint, c.endpoint) << c.method << " " << c.path;
  }
}

TEST(Routes, AccessTokensOnlyWhereTheSpecListsAccessTokenAuth) {
  for (auto [method, path] : std::vector<std::pair<const char*, const char*>>{
           {"GET", "/teams"}, {"GET", "/templates"}, {"POST", "/templates"}, {"GET", "/v2/templates"},
           {"DELETE", "/templates/t1"}, {"POST", "/templates/t1"}, {"PATCH", "/templates/t1"},
           {"PATCH", "/v2/templates/t1"}, {"GET", "/templates/t1/files/h1"}, {"POST", "/templates/t1/builds/b1"},
           {"GET", "/templates/t1/builds/b1/status"}, {"GET", "/templates/t1/builds/b1/logs"}}) {
    auto m = match_route(method, path);
    EXPECT_EQ(m.kind, Kind::found) << method << " " << path;
    EXPECT_TRUE(m.access_token) << method << " " << path;
  }
  for (auto [method, path] : std::vector<std::pair<const char*, const char*>>{
           {"GET", "/v2/sandboxes"}, {"POST", "/sandboxes"}, {"GET", "/sandboxes/abc"}, {"DELETE", "/sandboxes/abc"},
           {"GET", "/templates/t1"}, {"GET", "/templates/aliases/base"}, {"POST", "/v3/templates"},
           {"POST", "/v2/templates"}, {"POST", "/v2/templates/t1/builds/b1"}, {"POST", "/templates/tags"},
           {"GET", "/templates/t1/tags"}, {"GET", "/teams/t1/metrics"}, {"GET", "/health"},
           {"POST", "/sandboxes/abc/pause"}, {"POST", "/sandboxes/abc/resume"}, {"POST", "/sandboxes/abc/fork"},
           {"POST", "/sandboxes/abc/snapshots"}, {"GET", "/snapshots"}}) {
    auto m = match_route(method, path);
    EXPECT_EQ(m.kind, Kind::found) << method << " " << path;
    EXPECT_FALSE(m.access_token) << method << " " << path;
  }
  EXPECT_EQ(match_route("GET", "/teams").endpoint, Endpoint::teams);
  EXPECT_FALSE(match_route("POST", "/teams").access_token);  // wrong method: nothing to authenticate
}

TEST(Routes, ParametersAreCollectedRaw) {
  auto m = match_route("POST", "/v2/sandboxes/abc-6532622b/connect");
  EXPECT_EQ(m.pattern, "/v2/sandboxes/{sandboxID}/connect");
  EXPECT_EQ(m.params, std::vector<std::string>{"abc-6532622b"});
  m = match_route("GET", "/templates/aliases/team%2Fname");
  EXPECT_EQ(m.params, std::vector<std::string>{"team%2Fname"});
}

TEST(Routes, KnownButUnimplementedPaths) {
  for (auto [method, path] : std::vector<std::pair<const char*, const char*>>{
           {"PUT", "/sandboxes/abc/network"}, {"GET", "/sandboxes/abc/logs"},
           {"POST", "/templates/t1/builds/b1"}, {"PATCH", "/templates/t1"},
           {"GET", "/templates/t1/builds/b1/logs"}, {"GET", "/volumes"}, {"GET", "/v2/sandboxes/abc/logs"}}) {
    auto m = match_route(method, path);
    EXPECT_EQ(m.kind, Kind::found) << method << " " << path;
    EXPECT_EQ(m.endpoint, Endpoint::unimplemented) << method << " " << path;
  }
}

TEST(Routes, TemplateBuildApi) {
  for (auto [method, path, endpoint] : std::vector<std::tuple<const char*, const char*, Endpoint>>{
           {"POST", "/v3/templates", Endpoint::template_register},
           {"DELETE", "/templates/t1", Endpoint::template_delete},
           {"GET", "/templates/t1/files/abcd", Endpoint::template_files},
           {"PUT", "/templates/t1/files/abcd/upload", Endpoint::template_upload},
           {"POST", "/v2/templates/t1/builds/b1", Endpoint::build_start},
           {"GET", "/templates/t1/builds/b1/status", Endpoint::build_status},
           {"POST", "/templates/tags", Endpoint::tags_assign},
           {"DELETE", "/templates/tags", Endpoint::tags_remove},
           {"GET", "/templates/t1/tags", Endpoint::tags_list}}) {
    auto m = match_route(method, path);
    EXPECT_EQ(m.kind, Kind::found) << method << " " << path;
    EXPECT_EQ(m.endpoint, endpoint) << method << " " << path;
  }
  // "tags" is a literal segment, not a template id.
  EXPECT_EQ(match_route("DELETE", "/templates/tags").endpoint, Endpoint::tags_remove);
}

TEST(Routes, PauseSnapshotAndForkRoutes) {
  auto m = match_route("POST", "/sandboxes/abc-6532622b/fork");
  EXPECT_EQ(m.pattern, "/sandboxes/{sandboxID}/fork");
  EXPECT_EQ(m.params, std::vector<std::string>{"abc-6532622b"});
  EXPECT_EQ(match_route("POST", "/sandboxes/abc/snapshots").pattern, "/sandboxes/{sandboxID}/snapshots");
  EXPECT_TRUE(match_route("GET", "/snapshots").params.empty());
  // Snapshots are deleted as templates.
  EXPECT_EQ(match_route("DELETE", "/templates/snap1").endpoint, Endpoint::template_delete);
  for (auto [method, path, allow] : std::vector<std::tuple<const char*, const char*, const char*>>{
           {"GET", "/sandboxes/abc/pause", "POST"}, {"DELETE", "/sandboxes/abc/resume", "POST"},
           {"GET", "/sandboxes/abc/fork", "POST"}, {"GET", "/sandboxes/abc/snapshots", "POST"},
           {"POST", "/snapshots", "GET"}}) {
    auto w = match_route(method, path);
    EXPECT_EQ(w.kind, Kind::wrong_method) << method << " " << path;
    EXPECT_EQ(w.allow, allow) << method << " " << path;
  }
  for (const char* path : {"/sandboxes/abc/pause/x", "/snapshots/s1", "/v2/sandboxes/abc/pause"}) {
    EXPECT_EQ(match_route("POST", path).kind, Kind::none) << path;
  }
}

TEST(Routes, WrongMethodListsTheAllowedOnes) {
  auto m = match_route("PUT", "/sandboxes/abc");
  EXPECT_EQ(m.kind, Kind::wrong_method);
  EXPECT_EQ(m.allow, "GET, DELETE");
  EXPECT_EQ(match_route("GET", "/sandboxes/abc/connect").kind, Kind::wrong_method);
  EXPECT_EQ(match_route("POST", "/health").kind, Kind::wrong_method);
}

TEST(Routes, UnknownPaths) {
  for (const char* path : {"/", "", "/nope", "/sandboxes/", "/sandboxes//connect", "/sandboxes/abc/connect/x",
                           "/v4/templates", "sandboxes", "/v2/sandboxes/abc"}) {
    EXPECT_EQ(match_route("GET", path).kind, Kind::none) << path;
  }
}

TEST(Routes, StaticSegmentsWinOverParameters) {
  EXPECT_EQ(match_route("GET", "/sandboxes/metrics").endpoint, Endpoint::metrics_many);
  EXPECT_EQ(match_route("GET", "/templates/aliases/tags").endpoint, Endpoint::template_alias);
  EXPECT_EQ(match_route("DELETE", "/templates/tags").pattern, "/templates/tags");
}

TEST(Routes, PathUnescape) {
  EXPECT_EQ(path_unescape("team%2Fname+x"), "team/name+x");
  EXPECT_FALSE(path_unescape("bad%2").has_value());
  EXPECT_FALSE(path_unescape("bad%zz").has_value());
}

}  // namespace
}  // namespace cove::shim::api
