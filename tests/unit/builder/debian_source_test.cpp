#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "test_files.hpp"
#include "rootfs-builder/debian_source.hpp"

namespace cove::builder {
namespace {
namespace fs = std::filesystem;

class DebianMirrorTest : public ::testing::Test {
 protected:
  std::string file(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  test::TempDir tmp_;
  fs::path dir_{tmp_.path()};
};

TEST_F(DebianMirrorTest, Deb822StanzaOfTheSuite) {
  auto deb822 = file("debian.sources",
                     "# comment\n"
                     "Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\nComponents: main\n\n"
                     "Types: deb\nURIs: http://disabled.example/debian\nSuites: bookworm\nEnabled: no\n\n"
                     "Types: deb\nURIs: http://mirror.example/debian\n http://second.example/debian\n"
                     "Suites: bookworm bookworm-updates\nComponents: main\n\n"
                     "Types: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\n");
  EXPECT_EQ(host_debian_mirror("bookworm", deb822, "/nonexistent"), "http://mirror.example/debian");
  EXPECT_EQ(host_debian_mirror("bookworm-security", deb822, "/nonexistent"), "http://security.example/debian-security");
  EXPECT_EQ(host_debian_mirror("trixie", deb822, "/nonexistent"), "");
}

TEST_F(DebianMirrorTest, OneLineSourcesAsTheFallback) {
  auto list = file("sources.list",
                   "deb-src http://src.example/debian bookworm main\n"
                   "deb [arch=amd64 signed-by=/x.gpg] http://line.example/debian bookworm main contrib\n");
  EXPECT_EQ(host_debian_mirror("bookworm", "/nonexistent", list), "http://line.example/debian");
  EXPECT_EQ(host_debian_mirror("sid", "/nonexistent", list), "");
}

TEST(DebianSuite, OnlyLowercaseNames) {
  EXPECT_TRUE(valid_suite("bookworm"));
  for (const char* bad : {"", "Bookworm", "../x", "bookworm;rm", "a b", "bookworm-updates"}) {
    EXPECT_FALSE(valid_suite(bad)) << bad;
  }
}

}  // namespace
}  // namespace cove::builder
