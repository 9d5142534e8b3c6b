// Image layers as overlay lowers: archived owners, modes, fifos and user xattrs kept; devices and
// trusted.* xattrs from the archive dropped; OCI whiteouts and opaque markers turned into overlayfs
// ones, checked by mounting the unpacked layers as an overlay in a private mount namespace.
#include "rootfs-builder/image_layers.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "rootfs-builder/content_digest.hpp"
#include "rootfs-builder/tar_reader.hpp"

namespace cove::builder {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = fs::temp_directory_path().string() + "/cove-layer-test.XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void put(const std::string& path, const std::string& content, mode_t mode = 0644, uid_t uid = 0, gid_t gid = 0) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
  if (::chown(path.c_str(), uid, gid) != 0 || ::chmod(path.c_str(), mode) != 0) throw std::runtime_error("chown/chmod failed");
}

void run(const std::string& cmd) {
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("command failed: " + cmd);
}

// GNU tar with numeric owners and every xattr, as image builders write layers.
void tar_up(const std::string& dir, const std::string& out, bool gzip) {
  run(std::string("tar --numeric-owner --xattrs --xattrs-include='*' -C '") + dir + "' -c" + (gzip ? "z" : "") + "f '" +
      out + "' .");
}

UnpackedLayer unpack_to(const std::string& blob, const std::string& dir) {
  fs::create_directories(dir);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("open failed");
  try {
    auto r = unpack_image_layer(blob, fd);
    ::close(fd);
    return r;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

std::string xattr(const std::string& path, const char* name) {
  char buf[256];
  const ssize_t n = ::lgetxattr(path.c_str(), name, buf, sizeof buf);
  return n < 0 ? std::string("<none>") : std::string(buf, static_cast<size_t>(n));
}

class ImageLayers : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::geteuid(), 0u) << "image layer tests need root (owners, mknod, trusted xattrs)"; }
  TempDir tmp;
};

TEST(OciLayerKey, IsTheHashOfTheTaggedDigest) {
  const std::string digest = "sha256:" + std::string(64, 'a');
  const std::string key = oci_layer_key(digest);
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ("sha256:" + key, sha256_digest_of("oci-layer\n" + digest));
  EXPECT_NE(key, oci_layer_key("sha256:" + std::string(64, 'b')));
}

TEST_F(ImageLayers, LowerLayerKeepsOwnersModesFifosAndUserXattrs) {
  const std::string src = tmp / "src";
  put(src + "/etc/keep", "keep", 0640, 1234, 5678);
  put(src + "/bin/su", "su", 04755, 0, 0);
  ASSERT_EQ(::chown((src + "/etc").c_str(), 1234, 5678), 0);
  ASSERT_EQ(::chmod((src + "/etc").c_str(), 0750), 0);
  ASSERT_EQ(::symlink("keep", (src + "/etc/link").c_str()), 0);
  ASSERT_EQ(::lchown((src + "/etc/link").c_str(), 1234, 5678), 0);
  fs::create_directories(src + "/dev");
  ASSERT_EQ(::mknod((src + "/dev/null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  fs::create_directories(src + "/run");
  ASSERT_EQ(::mkfifo((src + "/run/pipe").c_str(), 0620), 0);
  ASSERT_EQ(::chmod((src + "/run/pipe").c_str(), 0620), 0);  // past the umask
  ASSERT_EQ(::setxattr((src + "/etc/keep").c_str(), "user.note", "hi", 2, 0), 0);
  fs::create_directories(src + "/marked/inside");
  ASSERT_EQ(::setxattr((src + "/marked").c_str(), "trusted.overlay.opaque", "y", 1, 0), 0);
  const std::string blob = tmp / "layer.tar.gz";
  tar_up(src, blob, true);

  const std::string out = tmp / "out";
  const UnpackedLayer r = unpack_to(blob, out);
  EXPECT_EQ(r.skipped_devices, 1u);
  EXPECT_EQ(r.whiteouts, 0u);

  struct stat st {};
  ASSERT_EQ(::lstat((out + "/etc/keep").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 5678u);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  ASSERT_EQ(::lstat((out + "/etc").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  ASSERT_EQ(::lstat((out + "/etc/link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(st.st_uid, 1234u);
  ASSERT_EQ(::lstat((out + "/bin/su").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 04755u);
  ASSERT_EQ(::lstat((out + "/run/pipe").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0620u);
  EXPECT_NE(::lstat((out + "/dev/null").c_str(), &st), 0) << "a device node from the archive was created";
  EXPECT_EQ(xattr(out + "/etc/keep", "user.note"), "hi");
  // trusted.* from an archive would change what overlayfs shows: never applied.
  EXPECT_EQ(xattr(out + "/marked", "trusted.overlay.opaque"), "<none>");
}

TEST_F(ImageLayers, WhiteoutsAndOpaqueDirsStackAsOverlayLowers) {
  const std::string lower_src = tmp / "lower-src", upper_src = tmp / "upper-src";
  put(lower_src + "/etc/keep", "keep");
  put(lower_src + "/etc/gone", "gone");
  put(lower_src + "/etc/both", "old");
  put(lower_src + "/opq/old1", "x");
  put(lower_src + "/opq/sub/old2", "y");
  put(lower_src + "/ghost/x", "z");
  put(upper_src + "/etc/.wh.gone", "");
  put(upper_src + "/etc/added", "added");
  put(upper_src + "/etc/both", "new");  // the same layer has the name and its whiteout: the name wins
  put(upper_src + "/etc/.wh.both", "");
  put(upper_src + "/opq/.wh..wh..opq", "");
  put(upper_src + "/opq/new", "new");
  put(upper_src + "/.wh..wh.plnk", "");  // aufs bookkeeping: ignored
  const std::string lower_blob = tmp / "lower.tar", upper_blob = tmp / "upper.tar.gz";
  tar_up(lower_src, lower_blob, false);
  tar_up(upper_src, upper_blob, true);
  // A whiteout whose directory the archive does not list: the directory is implied.
  run("mkdir -p '" + tmp.path() + "/w/ghost' && touch '" + tmp.path() + "/w/ghost/.wh.x'");
  const std::string upper_only_ghost = tmp / "ghost.tar";
  run("tar -C '" + tmp.path() + "/w' -cf '" + upper_only_ghost + "' ghost/.wh.x");

  const std::string lower = tmp / "L1", upper = tmp / "L2", ghost = tmp / "L3";
  unpack_to(lower_blob, lower);
  const UnpackedLayer r = unpack_to(upper_blob, upper);
  EXPECT_EQ(r.whiteouts, 1u);  // etc/gone (etc/both is in the layer itself)
  EXPECT_EQ(r.opaque_dirs, 1u);
  const UnpackedLayer g = unpack_to(upper_only_ghost, ghost);
  EXPECT_EQ(g.whiteouts, 1u);

  struct stat st {};
  ASSERT_EQ(::lstat((upper + "/etc/gone").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(0, 0));
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_NE(::lstat((upper + "/etc/.wh.gone").c_str(), &st), 0) << "the OCI whiteout file itself was extracted";
  EXPECT_NE(::lstat((upper + "/opq/.wh..wh..opq").c_str(), &st), 0);
  EXPECT_NE(::lstat((upper + "/.wh..wh.plnk").c_str(), &st), 0);
  ASSERT_EQ(::lstat((upper + "/etc/both").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(xattr(upper + "/opq", "trusted.overlay.opaque"), "y");
  ASSERT_EQ(::lstat((ghost + "/ghost/x").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));

  // Stack ghost (top), upper, lower in a private mount namespace and look at the merged tree.
  const std::string mnt = tmp / "mnt";
  fs::create_directories(mnt);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0) _exit(100);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(101);
    const std::string opts = "lowerdir=" + ghost + ":" + upper + ":" + lower;
    if (::mount("overlay", mnt.c_str(), "overlay", MS_RDONLY, opts.c_str()) != 0) _exit(102);
    auto exists = [&](const char* rel) { return ::access((mnt + "/" + rel).c_str(), F_OK) == 0; };
    int failures = 0;
    if (exists("etc/gone")) failures |= 1;     // whited out
    if (!exists("etc/keep")) failures |= 2;    // untouched lower file
    if (!exists("etc/added")) failures |= 4;   // upper file
    if (exists("opq/old1")) failures |= 8;     // hidden by the opaque dir
    if (exists("opq/sub")) failures |= 16;
    if (!exists("opq/new")) failures |= 32;
    if (exists("ghost/x")) failures |= 64;     // whited out from a layer without the dir entry
    std::ifstream both(mnt + "/etc/both");
    std::string content;
    both >> content;
    if (content != "new") failures |= 128;
    _exit(failures);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "overlay check bits (100+: setup failed): " << WEXITSTATUS(status);
}

TEST_F(ImageLayers, ZstdAndMalformedWhiteoutsAreRefused) {
  const std::string zstd = tmp / "layer.zst";
  std::ofstream(zstd, std::ios::binary) << std::string("\x28\xb5\x2f\xfd", 4) << std::string(600, '\0');
  try {
    unpack_to(zstd, tmp / "z");
    ADD_FAILURE() << "zstd accepted";
  } catch (const TarError& e) {
    EXPECT_NE(std::string(e.what()).find("zstd"), std::string::npos) << e.what();
  }
  run("mkdir -p '" + tmp.path() + "/bad' && touch '" + tmp.path() + "/bad/.wh...'");
  const std::string bad = tmp / "bad.tar";
  run("tar -C '" + tmp.path() + "/bad' -cf '" + bad + "' .wh...");
  try {
    unpack_to(bad, tmp / "b");
    ADD_FAILURE() << "a whiteout of '..' was accepted";
  } catch (const TarError& e) {
    EXPECT_NE(std::string(e.what()).find("malformed whiteout"), std::string::npos) << e.what();
  }
  // Hostile members stay refused in this mode too.
  run("mkdir -p '" + tmp.path() + "/esc' && echo x > '" + tmp.path() + "/esc/f'");
  const std::string esc = tmp / "esc.tar";
  run("tar -C '" + tmp.path() + "/esc' -cf '" + esc + "' -P --transform='s,^f,../../f,' f");
  EXPECT_THROW(unpack_to(esc, tmp / "e"), TarError);
  EXPECT_FALSE(fs::exists(tmp / "f"));
}

}  // namespace
}  // namespace cove::builder
