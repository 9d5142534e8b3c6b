#include "interpreter/python_profile.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "interpreter/resources.hpp"

namespace cove::interpreter {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

mode_t mode_of(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class PythonProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "cove-python-profile-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(PythonProfile, WritesEveryPythonResourceUnderIpythonWithFixedModes) {
  const mode_t old_umask = ::umask(077);  // the modes must not depend on the agent's umask
  const std::string ipython_dir = write_python_profile((dir_ / "run").string());
  ::umask(old_umask);

  EXPECT_EQ(ipython_dir, (dir_ / "run" / "ipython").string());
  int written = 0;
  for (const auto& resource : resources()) {
    const std::string_view path = resource.path;
    if (path.substr(0, 7) != "python/") continue;
    const fs::path file = fs::path(ipython_dir) / std::string(path.substr(7));
    ASSERT_TRUE(fs::is_regular_file(file)) << file;
    EXPECT_EQ(read(file), resource.content) << file;
    EXPECT_EQ(mode_of(file), 0644) << file;
    for (fs::path d = file.parent_path(); d != dir_; d = d.parent_path()) EXPECT_EQ(mode_of(d), 0755) << d;
    ++written;
  }
  EXPECT_GE(written, 4);
  // The layout IPython looks for: IPYTHONDIR/profile_default/{ipython_kernel_config.py,startup/}.
  const fs::path profile = fs::path(ipython_dir) / "profile_default";
  EXPECT_NE(read(profile / "ipython_kernel_config.py").find("NoColor"), std::string::npos);
  EXPECT_TRUE(fs::is_regular_file(profile / "startup" / "00-cove-results.py"));
  EXPECT_TRUE(fs::is_regular_file(profile / "startup" / "01-cove-images.py"));
  EXPECT_TRUE(fs::is_regular_file(profile / "startup" / "_cove_ipython" / "charts.py"));
  // No temporary files left behind.
  for (const auto& entry : fs::recursive_directory_iterator(ipython_dir)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

TEST_F(PythonProfile, RewritingReplacesEditsAndStaleScriptsButKeepsIpythonsOwnFiles) {
  const fs::path startup = fs::path(write_python_profile(dir_.string())) / "profile_default" / "startup";
  std::ofstream(startup / "00-cove-results.py") << "edited";
  std::ofstream(startup / "99-old-agent.py") << "raise SystemExit";
  std::ofstream(startup / "README") << "IPython's own";
  fs::create_directories(startup / "_cove_ipython" / "__pycache__");

  write_python_profile(dir_.string());
  EXPECT_NE(read(startup / "00-cove-results.py"), "edited");
  EXPECT_NE(read(startup / "00-cove-results.py").find("install_results"), std::string::npos);
  EXPECT_FALSE(fs::exists(startup / "99-old-agent.py"));
  EXPECT_EQ(read(startup / "README"), "IPython's own");
  EXPECT_TRUE(fs::is_directory(startup / "_cove_ipython" / "__pycache__"));
}

TEST_F(PythonProfile, FailsClearlyWhenTheRuntimeDirIsUnusable) {
  std::ofstream(dir_ / "file") << "x";
  try {
    write_python_profile((dir_ / "file").string());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((dir_ / "file").string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(write_python_profile(""), std::runtime_error);
}

}  // namespace
}  // namespace cove::interpreter
