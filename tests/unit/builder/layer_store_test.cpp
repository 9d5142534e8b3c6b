#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "test_files.hpp"
#include "rootfs-builder/layer_store.hpp"

namespace cove::builder {
namespace {
namespace fs = std::filesystem;

class LayerStoreTest : public ::testing::Test {
 protected:
  std::string tree(const std::string& file_text) {
    LayerStore store(root_.string());
    std::string dir = store.make_staging();
    std::ofstream(dir + "/f") << file_text;
    return dir;
  }
  test::TempDir tmp_;
  fs::path root_{tmp_.path()};
};

const std::string kA(64, 'a');
const std::string kB(64, 'b');

TEST_F(LayerStoreTest, PublishIsAtomicAndTheFirstCopyWins) {
  LayerStore store(root_.string());
  EXPECT_FALSE(store.has(kA));
  std::string first = store.publish(tree("one"), kA);
  EXPECT_EQ(first, store.path(kA));
  EXPECT_TRUE(store.has(kA));
  std::string again = tree("two");
  EXPECT_EQ(store.publish(again, kA), first);  // same key: the content is the same by construction
  EXPECT_FALSE(fs::exists(again));
  std::ifstream in(first + "/f");
  std::string text;
  in >> text;
  EXPECT_EQ(text, "one");
}

TEST_F(LayerStoreTest, GarbageIsOnlyUnkeptContentKeyedLayers) {
  LayerStore store(root_.string());
  store.publish(tree("a"), kA);
  store.publish(tree("b"), kB);
  fs::create_directories(root_ / "agent-0123456789abcdef");  // not content-keyed: never collected
  std::string staging = store.make_staging();
  EXPECT_EQ(store.collect_garbage({store.path(kA)}), 1u);
  EXPECT_TRUE(store.has(kA));
  EXPECT_FALSE(store.has(kB));
  EXPECT_TRUE(fs::exists(root_ / "agent-0123456789abcdef"));
  EXPECT_TRUE(fs::exists(staging));  // a build in progress keeps its staging dir
  store.remove_staging_leftovers();  // … until a restart, when no build runs
  EXPECT_FALSE(fs::exists(staging));
  EXPECT_GT(store.disk_usage(kA), 0u);
}

}  // namespace
}  // namespace cove::builder
