#include <gtest/gtest.h>

#include "edge/internal_routes.hpp"

namespace cove::shim::edge {

TEST(CleanPath, GoRules) {
  EXPECT_EQ(clean_path(""), ".");
  EXPECT_EQ(clean_path("/"), "/");
  EXPECT_EQ(clean_path("//init/"), "/init");
  EXPECT_EQ(clean_path("/files/../init"), "/init");
  EXPECT_EQ(clean_path("/../../init"), "/init");
  EXPECT_EQ(clean_path("/a/./b/"), "/a/b");
  EXPECT_EQ(clean_path("a/../../b"), "../b");
}

TEST(RequestPath, DecodesAndDropsQuery) {
  EXPECT_EQ(request_path("/%69nit?x=1"), "/init");
  EXPECT_EQ(request_path("/a+b"), "/a+b");
  EXPECT_EQ(request_path("http://host:1/fsfreeze?y"), "/fsfreeze");
  EXPECT_EQ(request_path("/%zz"), std::nullopt);
  EXPECT_EQ(request_path("/%6"), std::nullopt);
}

TEST(EnvdInternalPath, ReservedRoutes) {
  for (const char* p : {"/init", "/freeze", "/unfreeze", "/collapse", "/fsfreeze", "/fsthaw", "/upgrade",
                        "/init/", "//init", "/files/../init", "init", "/./upgrade"}) {
    EXPECT_TRUE(is_envd_internal_path(p)) << p;
  }
  for (const char* p : {"", "/", "/health", "/files", "/initx", "/init/x", "/process.Process/Start", "/INIT"}) {
    EXPECT_FALSE(is_envd_internal_path(p)) << p;
  }
}

}  // namespace cove::shim::edge
