#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>

#include "runtime/container/checkpoint_images.hpp"
#include "runtime/container/host_files.hpp"

namespace cove::shim::container {
namespace {

TEST(CheckpointInfo, RoundTrips) {
  CheckpointInfo info;
  info.id_base = 165536;
  info.id_count = 65536;
  info.stdout_key = "file[2b:a7e23a]";
  auto back = checkpoint_info_from_json(to_json(info));
  EXPECT_EQ(back.version, 1);
  EXPECT_EQ(back.id_base, 165536u);
  EXPECT_EQ(back.id_count, 65536u);
  EXPECT_EQ(back.stdout_key, "file[2b:a7e23a]");
}

TEST(CheckpointInfo, RejectsBadInput) {
  EXPECT_THROW(checkpoint_info_from_json("not json"), std::invalid_argument);
  EXPECT_THROW(checkpoint_info_from_json("{}"), std::invalid_argument);
  EXPECT_THROW(checkpoint_info_from_json(R"({"version":2,"id_base":1,"id_count":1,"stdout_key":""})"),
               std::invalid_argument);
  EXPECT_THROW(checkpoint_info_from_json(R"({"version":1,"id_base":1,"id_count":0,"stdout_key":""})"),
               std::invalid_argument);
}

TEST(CheckpointInfo, SavedFileMarksACompleteCheckpoint) {
  char tmpl[] = "/tmp/cove-ckinfo-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  EXPECT_FALSE(load_checkpoint_info(dir));  // images alone are not a checkpoint
  CheckpointInfo info;
  info.id_base = 100000;
  info.id_count = 65536;
  save_checkpoint_info(dir, info);
  auto loaded = load_checkpoint_info(dir);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->id_base, 100000u);
  EXPECT_FALSE(exists(dir + "/cove-checkpoint.json.tmp"));
  std::ofstream(dir + "/cove-checkpoint.json") << "{broken";
  EXPECT_FALSE(load_checkpoint_info(dir));
  remove_tree(dir);
}

}  // namespace
}  // namespace cove::shim::container
