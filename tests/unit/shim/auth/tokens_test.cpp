#include "auth/tokens.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "../store/scratch_dir.hpp"

namespace cove::shim {
namespace {

using test::ScratchDir;

std::string seed_0_to_31() {
  std::string s;
  for (int i = 0; i < 32; ++i) s.push_back(static_cast<char>(i));
  return s;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Tokens, MatchAnIndependentHmacSha256) {
  // K=000102…1f; printf '%s' DATA | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K
  TokenIssuer issuer(seed_0_to_31());
  EXPECT_EQ(issuer.envd_access_token("i2x9k3m4n5p6q7r8s9t0"),
            "182ff3811b8fba88e152befbdc8753309a4c426fef5d1e0e44d97cbe4e07e103");
  EXPECT_EQ(issuer.traffic_access_token("i2x9k3m4n5p6q7r8s9t0"),
            "c58c0b8fc248347fbb2f010730dc1aabb344acad7190e00d61ae5f5382912d77");
}

TEST(Tokens, DifferBySandboxAndBySeed) {
  TokenIssuer a(seed_0_to_31());
  TokenIssuer b(std::string(32, 'x'));
  EXPECT_NE(a.envd_access_token("s1"), a.envd_access_token("s2"));
  EXPECT_NE(a.envd_access_token("s1"), b.envd_access_token("s1"));
  EXPECT_NE(a.envd_access_token("s1"), a.traffic_access_token("s1"));
}

TEST(Tokens, SeedFileIsCreatedPrivateAndReusedAcrossLoads) {
  ScratchDir dir;
  std::string state = dir / "state/nested";  // missing directories are created
  auto first = TokenIssuer::from_state_dir(state);
  struct stat st {};
  ASSERT_EQ(stat((state + "/seed").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 32);
  ASSERT_EQ(stat(state.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((dir / "state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  std::string seed = read_file(state + "/seed");
  auto second = TokenIssuer::from_state_dir(state);
  EXPECT_EQ(read_file(state + "/seed"), seed);
  EXPECT_EQ(first.envd_access_token("sbx"), second.envd_access_token("sbx"));
  EXPECT_EQ(TokenIssuer(seed).envd_access_token("sbx"), first.envd_access_token("sbx"));

  // No temporary files left behind.
  int entries = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(state)) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(Tokens, ExistingSeedIsUsed) {
  ScratchDir dir;
  int fd = open((dir / "seed").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  std::string seed = seed_0_to_31();
  ASSERT_EQ(write(fd, seed.data(), seed.size()), 32);
  close(fd);
  EXPECT_EQ(TokenIssuer::from_state_dir(dir.path()).envd_access_token("i2x9k3m4n5p6q7r8s9t0"),
            "182ff3811b8fba88e152befbdc8753309a4c426fef5d1e0e44d97cbe4e07e103");
}

TEST(Tokens, RefusesAShortOrExposedSeed) {
  ScratchDir dir;
  {
    int fd = open((dir / "seed").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "short", 5), 5);
    close(fd);
  }
  EXPECT_THROW(TokenIssuer::from_state_dir(dir.path()), std::runtime_error);
  ASSERT_EQ(unlink((dir / "seed").c_str()), 0);
  {
    int fd = open((dir / "seed").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0);
    std::string seed = seed_0_to_31();
    ASSERT_EQ(write(fd, seed.data(), seed.size()), 32);
    close(fd);
  }
  ASSERT_EQ(chmod((dir / "seed").c_str(), 0644), 0);
  try {
    TokenIssuer::from_state_dir(dir.path());
    FAIL() << "a world-readable seed was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).find(dir.path()), std::string::npos) << e.what();
  }
}

TEST(Tokens, StateDirThatIsAFileIsAnError) {
  ScratchDir dir;
  std::ofstream(dir / "file") << "x";
  EXPECT_THROW(TokenIssuer::from_state_dir(dir / "file"), std::runtime_error);
}

TEST(SecretsEqual, ComparesContentAndLength) {
  EXPECT_TRUE(secrets_equal("abc", "abc"));
  EXPECT_TRUE(secrets_equal("", ""));
  EXPECT_FALSE(secrets_equal("abc", "abd"));
  EXPECT_FALSE(secrets_equal("abc", "ab"));
  EXPECT_FALSE(secrets_equal("", "a"));
  EXPECT_FALSE(secrets_equal(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
}

}  // namespace
}  // namespace cove::shim
