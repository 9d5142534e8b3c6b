#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "interpreter/kernel.hpp"
#include "interpreter/kernelspec.hpp"

namespace cove::interpreter {
namespace {

namespace fs = std::filesystem;

class KernelspecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cove-kernelspec-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    local_ = root_ + "/local";
    system_ = root_ + "/system";
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& dir, const std::string& name, const std::string& json) {
    fs::create_directories(dir + "/" + name);
    std::ofstream(dir + "/" + name + "/kernel.json") << json;
  }

  std::string root_, local_, system_;
};

TEST_F(KernelspecTest, FirstDirectoryWinsAndTheSecondIsAFallback) {
  write(local_, "python3", R"({"argv": ["/opt/py", "-f", "{connection_file}"], "language": "python"})");
  write(system_, "python3", R"({"argv": ["/usr/bin/python3"], "language": "python"})");
  write(system_, "ir", R"json({"argv": ["R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"],
                         "display_name": "R", "language": "R", "env": {"R_LIBS": "/x"}})json");

  auto py = find_kernelspec("python3", {local_, system_});
  ASSERT_TRUE(py.has_value());
  EXPECT_EQ(py->argv.front(), "/opt/py");
  EXPECT_EQ(py->resource_dir, local_ + "/python3");
  EXPECT_EQ(py->interrupt_mode, "signal");

  auto ir = find_kernelspec("ir", {local_, system_});
  ASSERT_TRUE(ir.has_value());
  EXPECT_EQ(ir->name, "ir");
  EXPECT_EQ(ir->language, "R");
  EXPECT_EQ(ir->display_name, "R");
  EXPECT_EQ(ir->env, (std::map<std::string, std::string>{{"R_LIBS", "/x"}}));
  EXPECT_EQ(kernel_command(*ir, "/run/k.json"),
            (std::vector<std::string>{"R", "--slave", "-e", "IRkernel::main()", "--args", "/run/k.json"}));

  EXPECT_FALSE(find_kernelspec("javascript", {local_, system_}).has_value());
  EXPECT_FALSE(find_kernelspec("python3", {root_ + "/missing"}).has_value());
}

TEST_F(KernelspecTest, PlaceholdersAndInterruptMode) {
  write(local_, "msg", R"({"argv": ["{resource_dir}/run", "--f={connection_file}", "{connection_file}"],
                          "interrupt_mode": "message", "env": {}})");
  auto spec = find_kernelspec("msg", {local_});
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->interrupt_mode, "message");
  EXPECT_EQ(kernel_command(*spec, "/c.json"),
            (std::vector<std::string>{local_ + "/msg/run", "--f=/c.json", "/c.json"}));
}

TEST_F(KernelspecTest, MalformedSpecsAndNamesAreErrors) {
  auto expect_error = [&](const std::string& json, const std::string& needle) {
    write(local_, "bad", json);
    try {
      find_kernelspec("bad", {local_});
      ADD_FAILURE() << "accepted " << json;
    } catch (const KernelError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("{", "not a JSON object");
  expect_error("[]", "not a JSON object");
  expect_error(R"({"language": "python"})", "argv");
  expect_error(R"({"argv": []})", "argv");
  expect_error(R"({"argv": [1]})", "argv");
  expect_error(R"({"argv": [""]})", "argv[0]");
  expect_error(R"({"argv": ["x"], "env": []})", "env");
  expect_error(R"({"argv": ["x"], "env": {"A": 1}})", "env");
  expect_error(R"({"argv": ["x"], "env": {"A=B": "1"}})", "env name");
  expect_error(R"({"argv": ["x"], "interrupt_mode": "telepathy"})", "interrupt_mode");

  for (std::string name : {"", "..", "../etc", "a/b", "py thon"}) {
    EXPECT_THROW(find_kernelspec(name, {local_}), KernelError) << name;
  }
}

TEST(KernelspecDefaults, SystemDirectoriesInJupyterOrder) {
  EXPECT_EQ(default_kernelspec_dirs(),
            (std::vector<std::string>{"/usr/local/share/jupyter/kernels", "/usr/share/jupyter/kernels"}));
}

}  // namespace
}  // namespace cove::interpreter
