// POST /files/compose logic: request parsing, checks, concatenation through a temporary file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "files/compose.hpp"

namespace cove::files {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class FilesCompose : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cove-compose-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    user_.name = "tester";
    user_.uid = getuid();
    user_.gid = getgid();
    user_.home = dir_;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  bool run(const ComposeRequest& req, std::string& body, TransferError& error) {
    auto job = ComposeJob::start(req, user_, std::nullopt, error);
    if (!job) return false;
    for (;;) {
      bool done = false;
      if (!job->step(3, done, error)) return false;  // tiny steps exercise resumption
      if (done) break;
    }
    return job->finish(body, error);
  }
  std::string dir_;
  system::User user_;
};

TEST_F(FilesCompose, ParseRequest) {
  ComposeRequest r;
  std::string err;
  ASSERT_TRUE(parse_compose_request(R"({"source_paths":["a","b"],"destination":"d","username":"u","x":1} trailing)", r, err));
  EXPECT_EQ(r.source_paths, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.destination, "d");
  EXPECT_EQ(r.username, "u");
  ComposeRequest r2;
  EXPECT_FALSE(parse_compose_request("", r2, err));
  EXPECT_EQ(err, "invalid request body: EOF");
  EXPECT_FALSE(parse_compose_request("{\"source_paths\":", r2, err));
  EXPECT_EQ(err, "invalid request body: unexpected EOF");
  EXPECT_FALSE(parse_compose_request(R"({"source_paths":"a"})", r2, err));
  EXPECT_EQ(err, "invalid request body: json: cannot unmarshal string into Go struct field Compose.source_paths of type []string");
  EXPECT_EQ(check_compose_request(ComposeRequest{}).message, "source_paths must not be empty");
  ComposeRequest r3;
  r3.source_paths = {"a"};
  EXPECT_EQ(check_compose_request(r3).message, "destination is required");
}

TEST_F(FilesCompose, ConcatenatesReplacesAndDeletesSources) {
  std::ofstream(dir_ + "/p1") << "hello ";
  std::ofstream(dir_ + "/p2") << "big ";
  std::ofstream(dir_ + "/p3") << "world";
  std::ofstream(dir_ + "/out") << "previous";
  ComposeRequest req;
  req.source_paths = {"p1", dir_ + "/p2", "p3"};
  req.destination = "out";
  std::string body;
  TransferError error;
  ASSERT_TRUE(run(req, body, error)) << error.message;
  EXPECT_EQ(body, "{\"name\":\"out\",\"path\":\"" + dir_ + "/out\",\"type\":\"file\"}\n");
  EXPECT_EQ(read_file(dir_ + "/out"), "hello big world");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/p1"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/p2"));
  size_t count = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_)) ++count;
  EXPECT_EQ(count, 1u);  // no temporary file left
}

TEST_F(FilesCompose, CreatesDestinationParents) {
  std::ofstream(dir_ + "/s") << "x";
  ComposeRequest req;
  req.source_paths = {"s"};
  req.destination = "new/dir/out";
  std::string body;
  TransferError error;
  ASSERT_TRUE(run(req, body, error)) << error.message;
  EXPECT_EQ(read_file(dir_ + "/new/dir/out"), "x");
}

TEST_F(FilesCompose, Refusals) {
  std::ofstream(dir_ + "/s") << "x";
  std::filesystem::create_directories(dir_ + "/d");
  std::string body;
  TransferError error;
  ComposeRequest req;
  req.destination = "out";
  req.source_paths = {"s", "missing"};
  EXPECT_FALSE(run(req, body, error));
  EXPECT_EQ(error.status, 404u);
  EXPECT_EQ(error.message, "source file not found: missing");

  error = {};
  req.source_paths = {"d"};
  EXPECT_FALSE(run(req, body, error));
  EXPECT_EQ(error.status, 400u);
  EXPECT_EQ(error.message, "source path is not a regular file: d");

  error = {};
  req.source_paths = {"s", dir_ + "/out"};
  EXPECT_FALSE(run(req, body, error));
  EXPECT_EQ(error.status, 400u);
  EXPECT_EQ(error.message, "source path \"" + dir_ + "/out\" cannot be the same as destination");
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/s"));  // nothing deleted on refusal
}

}  // namespace
}  // namespace cove::files
