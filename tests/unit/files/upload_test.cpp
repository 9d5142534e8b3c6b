// POST /files logic without sockets: raw and multipart sinks, temp-file-and-rename semantics,
// envd's errors, and out-of-space behaviour on a tiny tmpfs in a private mount namespace.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/inotify.h>
#include <poll.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>
#include <string>

#include "files/upload.hpp"

namespace cove::files {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct Result {
  TransferError error;
  std::vector<UploadedFile> files;
};

Result run_upload(const std::string& content_type, UploadOptions options, const std::string& body, size_t chunk = 7,
                  bool finish = true) {
  Result r;
  auto sink = make_upload_sink(content_type, std::move(options), r.error);
  if (!sink) return r;
  for (size_t i = 0; i < body.size(); i += chunk) {
    if (!sink->write(std::string_view(body).substr(i, chunk))) break;
  }
  if (finish && !sink->error()) sink->finish();
  r.error = sink->error();
  r.files = sink->files();
  return r;
}

std::string part(const std::string& disposition, const std::string& data, const std::string& boundary = "B0und") {
  return "--" + boundary + "\r\nContent-Disposition: " + disposition + "\r\nContent-Type: application/octet-stream\r\n\r\n" +
         data + "\r\n";
}

class Upload : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cove-upload-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    old_umask_ = umask(022);
    user_.name = "tester";
    user_.uid = getuid();
    user_.gid = getgid();
    user_.home = dir_ + "/home";
    std::filesystem::create_directories(user_.home);
  }
  void TearDown() override {
    umask(old_umask_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  UploadOptions options(std::optional<std::string> path = std::nullopt) {
    UploadOptions o;
    o.user = user_;
    o.path_param = std::move(path);
    return o;
  }

  std::string dir_;
  mode_t old_umask_ = 022;
  system::User user_;
};

TEST_F(Upload, RawBodyCreatesFileAndParents) {
  auto r = run_upload("application/octet-stream", options(dir_ + "/a/b/c.txt"), "hello world");
  ASSERT_FALSE(r.error) << r.error.message;
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].path, dir_ + "/a/b/c.txt");
  EXPECT_EQ(r.files[0].name, "c.txt");
  EXPECT_EQ(read_file(dir_ + "/a/b/c.txt"), "hello world");
  struct stat st{};
  ASSERT_EQ(stat((dir_ + "/a/b/c.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(st.st_uid, user_.uid);
  ASSERT_EQ(stat((dir_ + "/a/b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(entries(dir_ + "/a/b"), std::vector<std::string>{"c.txt"});  // no temp file left
}

TEST_F(Upload, RelativePathResolvesAgainstHome) {
  auto r = run_upload("application/octet-stream", options("rel/x.bin"), "x");
  ASSERT_FALSE(r.error) << r.error.message;
  EXPECT_EQ(r.files[0].path, user_.home + "/rel/x.bin");
}

TEST_F(Upload, OverwriteKeepsModeAndReplacesContent) {
  std::string path = dir_ + "/f.txt";
  write_file(path, "old content that is longer");
  chmod(path.c_str(), 0600);
  auto r = run_upload("application/octet-stream", options(path), "new");
  ASSERT_FALSE(r.error) << r.error.message;
  EXPECT_EQ(read_file(path), "new");
  struct stat st{};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(entries(dir_), (std::vector<std::string>{"f.txt", "home"}));
}

TEST_F(Upload, CutOffUploadLeavesTheOldFileIntact) {
  std::string path = dir_ + "/keep.txt";
  write_file(path, "precious");
  {
    TransferError e;
    auto sink = make_upload_sink("application/octet-stream", options(path), e);
    ASSERT_TRUE(sink);
    ASSERT_TRUE(sink->write("partial new da"));
    // Staged as an unnamed file at the mount root: nothing shows up beside the target.
    EXPECT_EQ(entries(dir_), (std::vector<std::string>{"home", "keep.txt"}));
    // The client goes away: the sink is dropped without finish().
  }
  EXPECT_EQ(read_file(path), "precious");
  EXPECT_EQ(entries(dir_), (std::vector<std::string>{"home", "keep.txt"}));
}

TEST_F(Upload, FailedBodyDecodingLeavesTheOldFileIntact) {
  std::string path = dir_ + "/keep.txt";
  write_file(path, "precious");
  TransferError e;
  auto sink = make_upload_sink("application/octet-stream", options(path), e);
  ASSERT_TRUE(sink);
  ASSERT_TRUE(sink->write("abc"));
  sink->fail_input("unexpected EOF");
  EXPECT_EQ(sink->error().status, 500u);
  EXPECT_EQ(sink->error().message, "error writing file: unexpected EOF");
  EXPECT_EQ(read_file(path), "precious");
  EXPECT_EQ(entries(dir_), (std::vector<std::string>{"home", "keep.txt"}));
}

// What a watcher of the directory sees (envd.md §5 event mapping): only the target's name,
// create + write for a new file and write for an existing one, as envd's in-place write.
TEST_F(Upload, WatchersSeeOnlyTheTargetName) {
  std::string watched = dir_ + "/watched";
  std::filesystem::create_directories(watched);
  write_file(watched + "/existing.txt", "old");
  int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(in, 0);
  ASSERT_GE(inotify_add_watch(in, watched.c_str(),
                              IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_ATTRIB | IN_MODIFY | IN_DELETE),
            0);
  auto r = run_upload("application/octet-stream", options(watched + "/existing.txt"), "This file has been modified.");
  ASSERT_FALSE(r.error) << r.error.message;
  r = run_upload("application/octet-stream", options(watched + "/new.txt"), "hello");
  ASSERT_FALSE(r.error) << r.error.message;
  std::map<std::string, uint32_t> seen;
  char buf[8192];
  pollfd p{in, POLLIN, 0};
  while (poll(&p, 1, 100) > 0) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n <= 0) break;
    for (char* q = buf; q < buf + n;) {
      auto* e = reinterpret_cast<inotify_event*>(q);
      seen[e->len ? e->name : ""] |= e->mask;
      q += sizeof(inotify_event) + e->len;
    }
  }
  close(in);
  ASSERT_EQ(seen.size(), 2u) << "unexpected names were reported";
  EXPECT_TRUE(seen["existing.txt"] & IN_MODIFY);
  EXPECT_TRUE(seen["new.txt"] & IN_MODIFY);
  EXPECT_TRUE(seen["new.txt"] & (IN_CREATE | IN_MOVED_TO));
  EXPECT_EQ(read_file(watched + "/existing.txt"), "This file has been modified.");
  EXPECT_EQ(read_file(watched + "/new.txt"), "hello");
}

TEST_F(Upload, StagesAtTheMountRoot) {
  EXPECT_EQ(mount_root_of(dir_), mount_root_of("/"));
  TransferError e;
  auto w = AtomicFileWriter::open(dir_ + "/s.txt", user_.uid, user_.gid, -1, e);
  ASSERT_TRUE(w) << e.message;
  EXPECT_EQ(w->staging(), AtomicFileWriter::Staging::unnamed);
  EXPECT_EQ(w->staging_dir(), mount_root_of(dir_));
}

TEST_F(Upload, WritesThroughSymlinks) {
  std::string real = dir_ + "/real.txt";
  write_file(real, "old");
  ASSERT_EQ(symlink("real.txt", (dir_ + "/link.txt").c_str()), 0);
  auto r = run_upload("application/octet-stream", options(dir_ + "/link.txt"), "via link");
  ASSERT_FALSE(r.error) << r.error.message;
  EXPECT_EQ(r.files[0].path, dir_ + "/link.txt");
  EXPECT_EQ(read_file(real), "via link");
  struct stat st{};
  ASSERT_EQ(lstat((dir_ + "/link.txt").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST_F(Upload, RefusalsBeforeTheBody) {
  auto r = run_upload("application/octet-stream", options(), "x");
  EXPECT_EQ(r.error.status, 400u);
  EXPECT_EQ(r.error.message, "path query parameter is required for raw body upload");

  std::filesystem::create_directories(dir_ + "/adir");
  r = run_upload("application/octet-stream", options(dir_ + "/adir"), "x");
  EXPECT_EQ(r.error.status, 400u);
  EXPECT_EQ(r.error.message, "path is a directory: " + dir_ + "/adir");

  write_file(dir_ + "/afile", "");
  r = run_upload("application/octet-stream", options(dir_ + "/afile/sub/x"), "x");
  EXPECT_EQ(r.error.status, 500u);
  EXPECT_EQ(r.error.message, "error ensuring directories: path is a file: " + dir_ + "/afile");

  r = run_upload("text/plain", options("x"), "x");
  EXPECT_EQ(r.error.status, 400u);
  EXPECT_EQ(r.error.message, "unsupported content type: text/plain, expected multipart/form-data or application/octet-stream");
  r = run_upload("", options("x"), "x");
  EXPECT_EQ(r.error.message, "unsupported content type: , expected multipart/form-data or application/octet-stream");

  r = run_upload("multipart/related; boundary=x", options(), "");
  EXPECT_EQ(r.error.status, 500u);
  EXPECT_EQ(r.error.message, "error parsing multipart form: request Content-Type isn't multipart/form-data");
  r = run_upload("multipart/form-data", options(), "");
  EXPECT_EQ(r.error.status, 500u);
  EXPECT_EQ(r.error.message, "error parsing multipart form: no multipart boundary param in Content-Type");

  r = run_upload("application/octet-stream", options("~other/x"), "x");
  EXPECT_EQ(r.error.status, 400u);
  EXPECT_EQ(r.error.message.rfind("error resolving path: ", 0), 0u);
}

TEST_F(Upload, MultipartFilesByFilename) {
  std::string body = part("form-data; name=\"file\"; filename=\"" + dir_ + "/m/one.txt\"", "first file") +
                     part("form-data; name=\"other\"", "ignored field") +
                     part("form-data; name=\"file\"; filename=\"two.txt\"", std::string(100000, 'z')) + "--B0und--\r\n";
  auto r = run_upload("multipart/form-data; boundary=B0und", options(), body, 1000);
  ASSERT_FALSE(r.error) << r.error.message;
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.files[0].path, dir_ + "/m/one.txt");
  EXPECT_EQ(read_file(dir_ + "/m/one.txt"), "first file");
  EXPECT_EQ(r.files[1].path, user_.home + "/two.txt");
  EXPECT_EQ(read_file(user_.home + "/two.txt"), std::string(100000, 'z'));
  EXPECT_EQ(upload_response_json(r.files), "[{\"name\":\"one.txt\",\"path\":\"" + dir_ +
                                               "/m/one.txt\",\"type\":\"file\"},{\"name\":\"two.txt\",\"path\":\"" +
                                               user_.home + "/two.txt\",\"type\":\"file\"}]");
}

TEST_F(Upload, MultipartPathParameterOverridesFilename) {
  std::string body = part("form-data; name=\"file\"; filename=\"ignored.txt\"", "data") + "--B0und--\r\n";
  auto r = run_upload("multipart/form-data; boundary=B0und", options(dir_ + "/q.txt"), body);
  ASSERT_FALSE(r.error) << r.error.message;
  EXPECT_EQ(read_file(dir_ + "/q.txt"), "data");
  EXPECT_FALSE(std::filesystem::exists(user_.home + "/ignored.txt"));
}

TEST_F(Upload, MultipartSamePathTwice) {
  std::string body = part("form-data; name=\"file\"; filename=\"a\"", "1") +
                     part("form-data; name=\"file\"; filename=\"b\"", "2") + "--B0und--\r\n";
  auto r = run_upload("multipart/form-data; boundary=B0und", options(dir_ + "/same"), body);
  EXPECT_EQ(r.error.status, 400u);
  EXPECT_EQ(r.error.message, "you cannot upload multiple files to the same path '" + dir_ +
                                 "/same' in one upload request, only the first specified file was uploaded");
  EXPECT_EQ(read_file(dir_ + "/same"), "1");  // the first stays written

  body = part("form-data; name=\"file\"; filename=\"" + dir_ + "/x\"", "1") +
         part("form-data; name=\"file\"; filename=\"" + dir_ + "/y\"", "2") +
         part("form-data; name=\"file\"; filename=\"" + dir_ + "/z\"", "3") +
         part("form-data; name=\"file\"; filename=\"" + dir_ + "/y\"", "4") + "--B0und--\r\n";
  r = run_upload("multipart/form-data; boundary=B0und", options(), body);
  EXPECT_EQ(r.error.message, "you cannot upload multiple files to the same path '" + dir_ +
                                 "/y' in one upload request, only the first specified file was uploaded, also the "
                                 "following files were uploaded: " + dir_ + "/x, " + dir_ + "/z");
}

TEST_F(Upload, MultipartPartErrors) {
  std::string body = part("form-data; name=\"file\"", "no filename") + "--B0und--\r\n";
  auto r = run_upload("multipart/form-data; boundary=B0und", options(), body);
  EXPECT_EQ(r.error.status, 400u);
  EXPECT_EQ(r.error.message,
            "error getting multipart custom part file name: filename not found in Content-Disposition header");

  r = run_upload("multipart/form-data; boundary=B0und", options(), "");
  EXPECT_EQ(r.error.status, 500u);
  EXPECT_EQ(r.error.message, "error reading form: multipart: NextPart: EOF");

  r = run_upload("multipart/form-data; boundary=B0und", options(), "--B0und--\r\n");
  EXPECT_FALSE(r.error);
  EXPECT_TRUE(r.files.empty());
  EXPECT_EQ(upload_response_json(r.files), "[]");
}

TEST_F(Upload, TruncatedMultipartLeavesNothingBehind) {
  std::string path = dir_ + "/t.txt";
  write_file(path, "before");
  std::string body = "--B0und\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + path + "\"\r\n\r\ncut he";
  auto r = run_upload("multipart/form-data; boundary=B0und", options(), body);
  EXPECT_EQ(r.error.status, 500u);
  EXPECT_EQ(r.error.message, "error writing file: unexpected EOF");
  EXPECT_EQ(read_file(path), "before");
  EXPECT_EQ(entries(dir_), (std::vector<std::string>{"home", "t.txt"}));
}

TEST_F(Upload, MetadataIsReplacedAndReadBack) {
  std::string probe = dir_ + "/probe";
  write_file(probe, "");
  if (setxattr(probe.c_str(), "user.probe", "1", 1, 0) != 0) GTEST_SKIP() << "no user xattrs here";
  std::string path = dir_ + "/meta.txt";
  auto o = options(path);
  o.metadata = {{"author", "me"}, {"purpose", "test"}};
  auto r = run_upload("application/octet-stream", o, "x");
  ASSERT_FALSE(r.error) << r.error.message;
  EXPECT_EQ(r.files[0].metadata, (Metadata{{"author", "me"}, {"purpose", "test"}}));
  EXPECT_EQ(upload_response_json(r.files), "[{\"metadata\":{\"author\":\"me\",\"purpose\":\"test\"},\"name\":\"meta.txt\","
                                           "\"path\":\"" + path + "\",\"type\":\"file\"}]");
  r = run_upload("application/octet-stream", options(path), "y");  // no headers: cleared
  ASSERT_FALSE(r.error) << r.error.message;
  EXPECT_TRUE(r.files[0].metadata.empty());
  EXPECT_TRUE(read_metadata(path).empty());
}

// ---- out of space, on a tiny tmpfs in a private mount namespace (needs CAP_SYS_ADMIN) ----

// Runs `body` in a child inside its own mount namespace with a tmpfs of `options` mounted at
// `dir`; returns what the child wrote to the pipe, or nullopt when namespaces are unavailable.
template <typename Fn>
std::optional<std::string> in_tiny_tmpfs(const std::string& dir, const char* mount_options, Fn body) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("tmpfs", dir.c_str(), "tmpfs", 0, mount_options) != 0) {
      _exit(77);
    }
    std::string report = body();
    (void)!write(fds[1], report.data(), report.size());
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) return std::nullopt;
  return out;
}

TEST_F(Upload, DiskFullGives507AndKeepsTheOldFile) {
  std::string mnt = dir_ + "/mnt";
  std::filesystem::create_directories(mnt);
  auto user = user_;
  auto report = in_tiny_tmpfs(mnt, "size=64k", [&]() -> std::string {
    std::string path = mnt + "/old.txt";
    write_file(path, "old content");
    UploadOptions o;
    o.user = user;
    o.path_param = path;
    o.content_length = 1 << 20;
    auto r = run_upload("application/octet-stream", o, std::string(1 << 20, 'x'), 65536);
    std::string listing;
    for (const auto& e : entries(mnt)) listing += e + ";";
    return std::to_string(r.error.status) + "|" + r.error.message + "|" + read_file(path) + "|" + listing;
  });
  if (!report) GTEST_SKIP() << "no private mount namespace (needs CAP_SYS_ADMIN)";
  EXPECT_EQ(*report, "507|attempted to write 1048576 bytes: not enough disk space available|old content|old.txt;");
}

TEST_F(Upload, DiskFullWithoutContentLength) {
  std::string mnt = dir_ + "/mnt";
  std::filesystem::create_directories(mnt);
  auto user = user_;
  auto report = in_tiny_tmpfs(mnt, "size=64k", [&]() -> std::string {
    std::string body = "--B0und\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + mnt +
                       "/big\"\r\n\r\n" + std::string(1 << 20, 'y') + "\r\n--B0und--\r\n";
    UploadOptions o;
    o.user = user;
    auto r = run_upload("multipart/form-data; boundary=B0und", o, body, 65536);
    return std::to_string(r.error.status) + "|" + r.error.message + "|" + std::to_string(entries(mnt).size());
  });
  if (!report) GTEST_SKIP() << "no private mount namespace (needs CAP_SYS_ADMIN)";
  EXPECT_EQ(*report, "507|not enough disk space available|0");
}

TEST_F(Upload, OutOfInodesGives507) {
  std::string mnt = dir_ + "/mnt";
  std::filesystem::create_directories(mnt);
  auto user = user_;
  auto report = in_tiny_tmpfs(mnt, "size=1m,nr_inodes=2", [&]() -> std::string {
    write_file(mnt + "/only", "1");  // the root directory and this file use both inodes
    UploadOptions o;
    o.user = user;
    o.path_param = mnt + "/new.txt";
    auto r = run_upload("application/octet-stream", o, "abc");
    return std::to_string(r.error.status) + "|" + r.error.message;
  });
  if (!report) GTEST_SKIP() << "no private mount namespace (needs CAP_SYS_ADMIN)";
  EXPECT_EQ(*report, "507|not enough inodes available: open " + mnt + "/new.txt: no space left on device");
}

}  // namespace
}  // namespace cove::files
