// The build-context tar reader and extractor: formats GNU tar writes, gzip detection, modes, links,
// ownership, and the refusals that keep a hostile archive inside the destination.
#include "rootfs-builder/tar_reader.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_files.hpp"

namespace cove::builder {
namespace {

namespace fs = std::filesystem;
using test::read_file;
using test::run;

constexpr uint32_t kUid = 4321, kGid = 8765;

using test::TempDir;

void write_file(const std::string& path, const std::string& content, mode_t mode = 0644) {
  std::ofstream(path, std::ios::binary) << content;
  if (::chmod(path.c_str(), mode) != 0) throw std::runtime_error("chmod failed");
}

void gzip_file(const std::string& in, const std::string& out) {
  const std::string data = read_file(in);
  gzFile gz = gzopen(out.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, data.data(), static_cast<unsigned>(data.size())), static_cast<int>(data.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
}

struct stat lstat_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) throw std::runtime_error("lstat failed: " + path);
  return st;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool empty_dir(const std::string& path) { return fs::is_empty(path); }

// How RawTar writes one member (outside the class: GCC cannot use its default initialisers in a
// default argument inside it).
struct Opts {
  char type = '0';
  std::string link;
  uint32_t mode = 0644;
  bool bad_checksum = false;
  int64_t size_override = -1;  // header size differing from the data written
};

// Byte-by-byte ustar headers for archives GNU tar would never write.
class RawTar {
 public:
  RawTar& add(const std::string& name, const std::string& data = "", Opts o = {}) {
    char h[512] = {};
    std::memcpy(h, name.data(), std::min<size_t>(name.size(), 100));
    std::snprintf(h + 100, 8, "%07o", o.mode);
    std::snprintf(h + 108, 8, "%07o", 0);
    std::snprintf(h + 116, 8, "%07o", 0);
    const uint64_t size = o.size_override >= 0 ? static_cast<uint64_t>(o.size_override) : data.size();
    std::snprintf(h + 124, 12, "%011llo", static_cast<unsigned long long>(size));
    std::snprintf(h + 136, 12, "%011o", 1700000000u);
    h[156] = o.type;
    std::memcpy(h + 157, o.link.data(), std::min<size_t>(o.link.size(), 100));
    std::memcpy(h + 257, "ustar\0" "00", 8);
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    if (o.bad_checksum) sum += 1;
    std::snprintf(h + 148, 8, "%06o", sum);
    bytes_.append(h, 512);
    bytes_ += data;
    bytes_.append((512 - data.size() % 512) % 512, '\0');
    return *this;
  }
  RawTar& pax(const std::map<std::string, std::string>& records) {
    std::string body;
    for (const auto& [k, v] : records) {
      const std::string rest = " " + k + "=" + v + "\n";
      size_t len = rest.size() + 1;
      while (std::to_string(len).size() + rest.size() != len) ++len;
      body += std::to_string(len) + rest;
    }
    return add("PaxHeaders/x", body, {.type = 'x'});
  }
  RawTar& end() {
    bytes_.append(1024, '\0');
    return *this;
  }
  const std::string& bytes() const { return bytes_; }
  void save(const std::string& path) const { std::ofstream(path, std::ios::binary) << bytes_; }

 private:
  std::string bytes_;
};

std::vector<TarEntry> list(const std::string& archive) {
  TarReader reader(archive);
  std::vector<TarEntry> out;
  while (auto e = reader.next()) out.push_back(*e);
  return out;
}

const TarEntry* find(const std::vector<TarEntry>& entries, const std::string& path) {
  for (const auto& e : entries) {
    if (e.path == path) return &e;
  }
  return nullptr;
}

std::string identity(const TarEntry& e) { return e.path; }

void extract_to(const std::string& archive, const std::string& dest,
                const std::function<std::string(const TarEntry&)>& select = identity) {
  TarReader reader(archive);
  const int fd = ::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  try {
    extract(reader, fd, select, ExtractOwner{kUid, kGid});
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

// The TarError message of extracting `archive` (empty when it succeeds).
std::string extract_error(const std::string& archive, const std::string& dest) {
  try {
    extract_to(archive, dest);
  } catch (const TarError& e) {
    return e.what();
  }
  return "";
}

std::string list_error(const std::string& archive) {
  try {
    list(archive);
  } catch (const TarError& e) {
    return e.what();
  }
  return "";
}

// A source tree covering the common member kinds, archived by GNU tar.
class GnuTarFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    src = tmp / "src";
    fs::create_directories(src + "/app/bin");
    fs::create_directories(src + "/app/data");
    write_file(src + "/app/bin/run.sh", "#!/bin/sh\necho hi\n", 0755);
    write_file(src + "/app/data/secret.txt", "top secret", 0600);
    write_file(src + "/app/bin/suid", "suid", 04755);
    write_file(src + "/app/readme.md", std::string(300000, 'r'), 0644);  // spans several data pieces
    ASSERT_EQ(::chmod((src + "/app/data").c_str(), 02750), 0);
    ASSERT_EQ(::symlink("bin/run.sh", (src + "/app/link").c_str()), 0);
    ASSERT_EQ(::symlink("/etc/passwd", (src + "/app/abs-link").c_str()), 0);
    ASSERT_EQ(::link((src + "/app/bin/run.sh").c_str(), (src + "/app/hard.sh").c_str()), 0);
    ASSERT_EQ(::chmod((src + "/app").c_str(), 0750), 0);
    // A fixed mtime so the test can check it.
    run("touch -h -d @1600000000 " + src + "/app/bin/run.sh " + src + "/app/link");
  }

  std::string make(const std::string& format, const std::string& extra = "app") {
    const std::string out = tmp / (format + ".tar");
    run("tar --sort=name --format=" + format + " -cf " + out + " -C " + src + " " + extra);
    return out;
  }

  TempDir tmp;
  std::string src;
};

void expect_common_tree(const std::string& dest) {
  EXPECT_EQ(read_file(dest + "/app/bin/run.sh"), "#!/bin/sh\necho hi\n");
  EXPECT_EQ(read_file(dest + "/app/data/secret.txt"), "top secret");
  EXPECT_EQ(read_file(dest + "/app/readme.md"), std::string(300000, 'r'));
  EXPECT_EQ(lstat_of(dest + "/app/bin/run.sh").st_mode & 07777, 0755u);
  EXPECT_EQ(lstat_of(dest + "/app/data/secret.txt").st_mode & 07777, 0600u);
  EXPECT_EQ(lstat_of(dest + "/app/bin/suid").st_mode & 07777, 04755u);  // survives the chown
  EXPECT_EQ(lstat_of(dest + "/app/data").st_mode & 07777, 02750u);
  EXPECT_EQ(lstat_of(dest + "/app").st_mode & 07777, 0750u);
  EXPECT_EQ(lstat_of(dest + "/app/bin/run.sh").st_mtime, 1600000000);
  const struct stat link = lstat_of(dest + "/app/link");
  ASSERT_TRUE(S_ISLNK(link.st_mode));
  EXPECT_EQ(fs::read_symlink(dest + "/app/link"), "bin/run.sh");
  EXPECT_EQ(fs::read_symlink(dest + "/app/abs-link"), "/etc/passwd");  // verbatim, not followed
  const struct stat hard = lstat_of(dest + "/app/hard.sh");
  EXPECT_EQ(hard.st_ino, lstat_of(dest + "/app/bin/run.sh").st_ino);
  EXPECT_EQ(hard.st_nlink, 2u);
  for (const char* rel : {"app", "app/bin", "app/bin/run.sh", "app/link", "app/data/secret.txt", "app/hard.sh"}) {
    const struct stat st = lstat_of(dest + "/" + rel);
    EXPECT_EQ(st.st_uid, kUid) << rel;
    EXPECT_EQ(st.st_gid, kGid) << rel;
  }
}

TEST_F(GnuTarFixture, UstarArchiveExtractsFilesModesLinksAndOwners) {
  const std::string archive = make("ustar");
  const auto entries = list(archive);
  const TarEntry* run_sh = find(entries, "app/bin/run.sh");
  ASSERT_NE(run_sh, nullptr);
  EXPECT_EQ(run_sh->type, EntryType::file);
  EXPECT_EQ(run_sh->size, 18u);
  EXPECT_EQ(run_sh->mode, 0755u);
  EXPECT_EQ(run_sh->mtime, 1600000000);
  const TarEntry* hard = find(entries, "app/hard.sh");
  ASSERT_NE(hard, nullptr);
  EXPECT_EQ(hard->type, EntryType::hardlink);
  EXPECT_EQ(hard->link_target, "app/bin/run.sh");
  ASSERT_NE(find(entries, "app"), nullptr);
  EXPECT_EQ(find(entries, "app")->type, EntryType::directory);
  EXPECT_EQ(find(entries, "app/link")->link_target, "bin/run.sh");

  TempDir dest;
  extract_to(archive, dest.path());
  expect_common_tree(dest.path());
}

TEST_F(GnuTarFixture, PaxAndGnuFormatsCarryLongNamesAndLinkTargets) {
  // 120 + 130 characters: too long for the ustar name/prefix split, so pax records / GNU 'L','K' headers.
  const std::string dir = "app/" + std::string(120, 'd');
  const std::string long_file = dir + "/" + std::string(130, 'f');
  const std::string long_target = std::string(150, 't');
  fs::create_directories(src + "/" + dir);
  write_file(src + "/" + long_file, "long", 0640);
  ASSERT_EQ(::symlink(long_target.c_str(), (src + "/app/long-link").c_str()), 0);

  for (const std::string format : {"pax", "gnu"}) {
    SCOPED_TRACE(format);
    const std::string archive = make(format);
    const auto entries = list(archive);
    ASSERT_NE(find(entries, long_file), nullptr);
    EXPECT_EQ(find(entries, long_file)->size, 4u);
    ASSERT_NE(find(entries, "app/long-link"), nullptr);
    EXPECT_EQ(find(entries, "app/long-link")->link_target, long_target);

    TempDir dest;
    extract_to(archive, dest.path());
    expect_common_tree(dest.path());
    EXPECT_EQ(read_file(dest / long_file), "long");
    EXPECT_EQ(lstat_of(dest / long_file).st_mode & 07777, 0640u);
    EXPECT_EQ(fs::read_symlink(dest / "app/long-link"), long_target);
  }
}

TEST_F(GnuTarFixture, GzipIsDetectedByMagicNotByName) {
  const std::string plain = make("pax");
  const std::string gz = tmp / "context.tar";  // gzip content under a plain name
  gzip_file(plain, gz);
  ASSERT_EQ(read_file(gz).substr(0, 2), "\x1f\x8b");

  const auto a = list(plain), b = list(gz);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GE(a.size(), 9u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].path, b[i].path);
    EXPECT_EQ(a[i].size, b[i].size);
  }
  TempDir dest;
  extract_to(gz, dest.path());
  expect_common_tree(dest.path());
}

TEST_F(GnuTarFixture, ConcatenatedGzipMembersReadAsOneStream) {
  const std::string data = read_file(make("ustar"));
  const std::string half1 = tmp / "h1", half2 = tmp / "h2", gz1 = tmp / "h1.gz", gz2 = tmp / "h2.gz";
  std::ofstream(half1, std::ios::binary) << data.substr(0, 7000);
  std::ofstream(half2, std::ios::binary) << data.substr(7000);
  gzip_file(half1, gz1);
  gzip_file(half2, gz2);
  const std::string joined = tmp / "joined.tar.gz";
  std::ofstream(joined, std::ios::binary) << read_file(gz1) << read_file(gz2);
  TempDir dest;
  extract_to(joined, dest.path());
  expect_common_tree(dest.path());
}

TEST_F(GnuTarFixture, ArchiveRootEntryIsSkippedAndDotSlashStripped) {
  const std::string archive = make("ustar", ".");  // members "./", "./app", ...
  const auto entries = list(archive);
  EXPECT_EQ(entries.front().path, "app");
  for (const auto& e : entries) EXPECT_FALSE(e.path.empty() || e.path[0] == '.' || e.path[0] == '/') << e.path;
  EXPECT_NE(find(entries, "app/bin/run.sh"), nullptr);
}

TEST_F(GnuTarFixture, ReadDataInPiecesAndNextSkipsUnreadData) {
  const std::string archive = make("ustar");
  TarReader reader(archive);
  size_t pieces = 0, bytes = 0;
  std::string seen_after;
  while (auto e = reader.next()) {
    if (e->path == "app/readme.md") {
      reader.read_data([&](const char*, size_t n) {
        EXPECT_LE(n, 256u * 1024u);
        ++pieces;
        bytes += n;
      });
      reader.read_data([&](const char*, size_t) { ADD_FAILURE() << "data read twice"; });
    }
    if (e->path == "app/data/secret.txt") {
      reader.read_data([&](const char* p, size_t n) { seen_after.append(p, n); });
    }
    // Every other file's data is left unread: next() must skip it.
  }
  EXPECT_EQ(bytes, 300000u);
  EXPECT_GE(pieces, 2u);
  EXPECT_EQ(seen_after, "top secret");
}

TEST_F(GnuTarFixture, SelectMapsAndSkipsMembers) {
  const std::string archive = make("ustar");
  TempDir dest;
  extract_to(archive, dest.path(), [](const TarEntry& e) -> std::string {
    if (e.path == "app/bin/run.sh") return "/srv/tool/run";  // leading '/' = the destination root
    if (e.path == "app/data/secret.txt") return "srv/secret";
    return "";
  });
  EXPECT_EQ(read_file(dest / "srv/tool/run"), "#!/bin/sh\necho hi\n");
  EXPECT_EQ(read_file(dest / "srv/secret"), "top secret");
  EXPECT_FALSE(exists(dest / "app"));
  // Implied parents: 0755 and owned like everything else.
  const struct stat parent = lstat_of(dest / "srv/tool");
  EXPECT_EQ(parent.st_mode & 07777, 0755u);
  EXPECT_EQ(parent.st_uid, kUid);
  EXPECT_EQ(parent.st_gid, kGid);
  std::vector<std::string> top;
  for (const auto& d : fs::directory_iterator(dest.path())) top.push_back(d.path().filename());
  EXPECT_EQ(top, std::vector<std::string>{"srv"});
  EXPECT_EQ(std::distance(fs::directory_iterator(dest / "srv"), fs::directory_iterator()), 2);
}

TEST_F(GnuTarFixture, SelectCannotEscapeTheDestination) {
  const std::string archive = make("ustar");
  TempDir dest;
  const std::string escape = fs::path(dest.path()).filename().string() + "-escape";  // unique beside dest
  try {
    extract_to(archive, dest.path(), [&](const TarEntry&) { return "../" + escape; });
    ADD_FAILURE() << "expected a TarError";
  } catch (const TarError& e) {
    EXPECT_NE(std::string(e.what()).find("'..'"), std::string::npos) << e.what();
  }
  const std::string beside = fs::path(dest.path()).parent_path() / escape;
  EXPECT_FALSE(exists(beside));
  std::error_code ec;
  fs::remove_all(beside, ec);
}

TEST_F(GnuTarFixture, HardlinkToASkippedMemberIsRefused) {
  const std::string archive = make("ustar");
  TempDir dest;
  try {
    extract_to(archive, dest.path(), [](const TarEntry& e) {
      return e.path == "app/bin/run.sh" ? std::string() : e.path;
    });
    FAIL() << "expected a TarError";
  } catch (const TarError& e) {
    EXPECT_NE(std::string(e.what()).find("app/hard.sh"), std::string::npos) << e.what();
  }
}

TEST(TarExtract, DirectoriesMergeAndOtherEntriesAreReplaced) {
  TempDir tmp, dest, outside;
  fs::create_directories(dest / "app");
  write_file(dest / "app/kept.txt", "kept");
  write_file(dest / "app/over.txt", "old");
  // A symlink in the way of a file: replaced, never written through.
  ASSERT_EQ(::symlink((outside / "target").c_str(), (dest / "app/planted").c_str()), 0);
  fs::create_directories(dest / "app/emptydir");
  fs::create_directories(dest / "app/full/sub");

  const std::string archive = tmp / "a.tar";
  RawTar()
      .add("app/", "", {.type = '5', .mode = 0755})
      .add("app/new.txt", "new")
      .add("app/over.txt", "replaced")
      .add("app/planted", "plain file now")
      .add("app/emptydir", "a file over an empty dir")
      .end()
      .save(archive);
  extract_to(archive, dest.path());
  EXPECT_EQ(read_file(dest / "app/kept.txt"), "kept");
  EXPECT_EQ(read_file(dest / "app/new.txt"), "new");
  EXPECT_EQ(read_file(dest / "app/over.txt"), "replaced");
  EXPECT_TRUE(S_ISREG(lstat_of(dest / "app/planted").st_mode));
  EXPECT_EQ(read_file(dest / "app/planted"), "plain file now");
  EXPECT_TRUE(S_ISREG(lstat_of(dest / "app/emptydir").st_mode));
  EXPECT_TRUE(empty_dir(outside.path()));

  const std::string archive2 = tmp / "b.tar";
  RawTar().add("app/full", "x").end().save(archive2);
  const std::string err = extract_error(archive2, dest.path());
  EXPECT_NE(err.find("non-empty directory"), std::string::npos) << err;
  EXPECT_TRUE(exists(dest / "app/full/sub"));
}

TEST(TarExtract, GlobalPaxHeadersAreIgnoredAndLocalOnesApplyToOneMember) {
  TempDir tmp;
  const std::string archive = tmp / "pax.tar";
  RawTar tar;
  tar.add("PaxHeaders/global", "21 path=/etc/ignored\n", {.type = 'g'});
  tar.pax({{"path", "renamed/by/pax.txt"}, {"mtime", "1234567890.5"}, {"uname", "someone"}});
  tar.add("short-name", "payload");
  tar.add("plain.txt", "p");
  tar.end().save(archive);
  const auto entries = list(archive);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].path, "renamed/by/pax.txt");
  EXPECT_EQ(entries[0].mtime, 1234567890);
  EXPECT_EQ(entries[0].size, 7u);
  EXPECT_EQ(entries[1].path, "plain.txt");
  EXPECT_EQ(entries[1].mtime, 1700000000);
}

TEST(TarExtract, ADirectoryModeIsAppliedAfterItsChildren) {
  TempDir tmp, dest;
  const std::string archive = tmp / "a.tar";
  RawTar()
      .add("ro", "", {.type = '5', .mode = 0555})
      .add("ro/inside.txt", "in")
      .add("sticky", "", {.type = '5', .mode = 01777})
      .end()
      .save(archive);
  extract_to(archive, dest.path());
  EXPECT_EQ(read_file(dest / "ro/inside.txt"), "in");
  EXPECT_EQ(lstat_of(dest / "ro").st_mode & 07777, 0555u);
  EXPECT_EQ(lstat_of(dest / "ro").st_mtime, 1700000000);
  EXPECT_EQ(lstat_of(dest / "sticky").st_mode & 07777, 01777u);
}

// ---------------------------------------------------------------------------------------------------
// Refusals

struct Refusal {
  std::string name;
  RawTar tar;
  std::string expect;  // a piece of the message
};

TEST(TarRefusals, HostileMembersAreRefusedNamingTheMember) {
  const std::vector<Refusal> cases = {
      {"absolute", RawTar().add("/etc/cron.d/evil", "x").end(), "absolute paths"},
      {"dotdot", RawTar().add("../x", "x").end(), "'..'"},
      {"nested dotdot", RawTar().add("a/../../x", "x").end(), "'..'"},
      {"chardev", RawTar().add("dev/null", "", {.type = '3'}).end(), "character devices"},
      {"blockdev", RawTar().add("dev/sda", "", {.type = '4'}).end(), "block devices"},
      {"fifo", RawTar().add("pipe", "", {.type = '6'}).end(), "fifos"},
      {"unknown type", RawTar().add("weird", "", {.type = 'Q'}).end(), "unsupported member type 'Q'"},
      {"bad checksum", RawTar().add("file.txt", "x", {.bad_checksum = true}).end(), "bad header checksum"},
      {"hardlink absolute", RawTar().add("h", "", {.type = '1', .link = "/etc/shadow"}).end(), "absolute paths"},
      {"hardlink dotdot", RawTar().add("h", "", {.type = '1', .link = "../outside/secret"}).end(), "'..'"},
      {"pax absolute", RawTar().pax({{"path", "/root/.ssh/authorized_keys"}}).add("innocent", "x").end(),
       "absolute paths"},
      {"pax linkpath dotdot",
       RawTar().pax({{"linkpath", "a/../../etc/passwd"}}).add("h", "", {.type = '1', .link = "ok"}).end(), "'..'"},
      {"pax sparse", RawTar().pax({{"GNU.sparse.major", "1"}}).add("s", "x").end(), "sparse"},
      {"malformed pax", RawTar().add("PaxHeaders/x", "99 path=a\n", {.type = 'x'}).add("a", "x").end(),
       "malformed pax header"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir tmp;
    // dest two levels down, so that an escape by '..' would land in `box` and be seen.
    const std::string box = tmp / "box", dest = tmp / "box/dest";
    fs::create_directories(dest);
    const std::string archive = tmp / "evil.tar";
    c.tar.save(archive);
    const std::string err = extract_error(archive, dest);
    EXPECT_NE(err.find(c.expect), std::string::npos) << err;
    EXPECT_NE(err.find("tar member '"), std::string::npos) << err;
    EXPECT_EQ(err.find(tmp.path()), std::string::npos) << err;  // no host path
    EXPECT_TRUE(empty_dir(dest));

    // The same archive gzipped is refused the same way.
    const std::string gz = tmp / "evil.tar.gz";
    gzip_file(archive, gz);
    EXPECT_NE(extract_error(gz, dest).find(c.expect), std::string::npos);
    EXPECT_TRUE(empty_dir(dest));
    EXPECT_EQ(std::distance(fs::directory_iterator(box), fs::directory_iterator()), 1);
  }
}

TEST(TarRefusals, TruncatedArchivesAreRefused) {
  TempDir tmp;
  const std::string full = RawTar().add("a.txt", std::string(2000, 'a')).add("b.txt", "b").end().bytes();
  const std::vector<std::pair<size_t, std::string>> cuts = {
      {1000, "beyond the end of the archive"},  // inside a.txt's data (the plain size check)
      {300, "header is cut short"},             // inside the first header
      {2560 + 1024, "no end-of-archive marker"},  // both members, no zero block
  };
  for (const auto& [len, expect] : cuts) {
    SCOPED_TRACE(len);
    const std::string plain = tmp / "cut.tar", gz = tmp / "cut.tar.gz";
    std::ofstream(plain, std::ios::binary) << full.substr(0, len);
    std::string err = list_error(plain);
    EXPECT_NE(err.find(expect), std::string::npos) << err;
    // Gzipped, the size is unknown up front: refused when the data runs out.
    gzip_file(plain, gz);
    err = list_error(gz);
    EXPECT_NE(err.find("truncated archive"), std::string::npos) << err;
  }

  // A member whose size runs past the end of the archive, gzipped: refused while extracting.
  const std::string lying = tmp / "lying.tar", lying_gz = tmp / "lying.tar.gz";
  RawTar().add("big.bin", "only this", {.size_override = 1 << 20}).save(lying);
  EXPECT_NE(list_error(lying).find("size is beyond the end of the archive"), std::string::npos);
  gzip_file(lying, lying_gz);
  TempDir dest;
  const std::string err = extract_error(lying_gz, dest.path());
  EXPECT_NE(err.find("truncated archive"), std::string::npos) << err;
  EXPECT_NE(err.find("big.bin"), std::string::npos) << err;

  // A gzip stream cut short.
  const std::string whole_gz = tmp / "whole.tar.gz", cut_gz = tmp / "cut-stream.tar.gz";
  std::ofstream(tmp / "whole.tar", std::ios::binary) << full;
  gzip_file(tmp / "whole.tar", whole_gz);
  const std::string gz_bytes = read_file(whole_gz);
  std::ofstream(cut_gz, std::ios::binary) << gz_bytes.substr(0, gz_bytes.size() - 12);
  EXPECT_NE(list_error(cut_gz).find("truncated archive"), std::string::npos) << list_error(cut_gz);

  // A damaged CRC in the gzip trailer, after the tar's end marker: still caught.
  std::string bad_crc = gz_bytes;
  bad_crc[bad_crc.size() - 8] = static_cast<char>(bad_crc[bad_crc.size() - 8] ^ 0x01);
  std::ofstream(tmp / "bad-crc.tar.gz", std::ios::binary) << bad_crc;
  EXPECT_NE(list_error(tmp / "bad-crc.tar.gz").find("corrupt gzip data"), std::string::npos);

  // Corrupt deflate data.
  std::string corrupt = gz_bytes;
  for (size_t i = 20; i < 40 && i < corrupt.size(); ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  std::ofstream(tmp / "corrupt.tar.gz", std::ios::binary) << corrupt;
  EXPECT_FALSE(list_error(tmp / "corrupt.tar.gz").empty());
}

TEST(TarRefusals, UnopenableArchiveMessageHasNoPath) {
  TempDir tmp;
  try {
    TarReader reader(tmp / "missing.tar");
    FAIL() << "expected a TarError";
  } catch (const TarError& e) {
    EXPECT_EQ(std::string(e.what()).find(tmp.path()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot open the archive"), std::string::npos) << e.what();
  }
}

TEST(TarRefusals, SymlinkThenWriteThroughItFails) {
  TempDir tmp, dest, outside;
  const std::string archive = tmp / "attack.tar";
  RawTar()
      .add("link", "", {.type = '2', .link = outside.path()})
      .add("link/evil", "pwned")
      .end()
      .save(archive);
  const std::string err = extract_error(archive, dest.path());
  EXPECT_NE(err.find("link/evil"), std::string::npos) << err;
  EXPECT_NE(err.find("symlink or not a directory"), std::string::npos) << err;
  EXPECT_EQ(err.find(outside.path()), std::string::npos) << err;
  EXPECT_TRUE(empty_dir(outside.path()));
  EXPECT_TRUE(S_ISLNK(lstat_of(dest / "link").st_mode));

  // Relative targets and deeper writes through a symlinked directory fare no better.
  TempDir dest2;
  const std::string rel_target = "../" + fs::path(outside.path()).filename().string();
  fs::create_directories(dest2 / "d");
  const std::string archive2 = tmp / "attack2.tar";
  RawTar()
      .add("d/up", "", {.type = '2', .link = "../" + rel_target})
      .add("d/up/sub/evil", "pwned")
      .end()
      .save(archive2);
  EXPECT_FALSE(extract_error(archive2, dest2.path()).empty());
  EXPECT_TRUE(empty_dir(outside.path()));

  // A symlink then a file of the same name: the link is replaced, its target untouched.
  TempDir dest3;
  write_file(outside / "victim", "original");
  const std::string archive3 = tmp / "attack3.tar";
  RawTar()
      .add("f", "", {.type = '2', .link = outside / "victim"})
      .add("f", "overwrite attempt")
      .end()
      .save(archive3);
  extract_to(archive3, dest3.path());
  EXPECT_EQ(read_file(outside / "victim"), "original");
  EXPECT_TRUE(S_ISREG(lstat_of(dest3 / "f").st_mode));
}

TEST(TarRefusals, HardlinksOnlyToExtractedFiles) {
  TempDir tmp, dest, outside;
  write_file(outside / "secret", "secret");
  // Through a planted symlink: the target was never extracted.
  const std::string archive = tmp / "hard.tar";
  RawTar()
      .add("link", "", {.type = '2', .link = outside.path()})
      .add("grab", "", {.type = '1', .link = "link/secret"})
      .end()
      .save(archive);
  const std::string err = extract_error(archive, dest.path());
  EXPECT_NE(err.find("not an extracted file"), std::string::npos) << err;
  EXPECT_FALSE(exists(dest / "grab"));
  EXPECT_EQ(lstat_of(outside / "secret").st_nlink, 1u);

  // A link to itself leaves the file as it is.
  TempDir dest_self;
  const std::string self = tmp / "self.tar";
  RawTar().add("f", "mine").add("f", "", {.type = '1', .link = "f"}).end().save(self);
  extract_to(self, dest_self.path());
  EXPECT_EQ(read_file(dest_self / "f"), "mine");

  // An extracted file later replaced by a symlink pointing out: refused too.
  TempDir dest2;
  const std::string archive2 = tmp / "hard2.tar";
  RawTar()
      .add("f", "mine")
      .add("f", "", {.type = '2', .link = outside / "secret"})
      .add("grab", "", {.type = '1', .link = "f"})
      .end()
      .save(archive2);
  EXPECT_NE(extract_error(archive2, dest2.path()).find("no longer a regular file"), std::string::npos);
  EXPECT_EQ(lstat_of(outside / "secret").st_nlink, 1u);
}

// Damaged archives end in a TarError (never a crash or another exception) and never write outside.
TEST(TarRefusals, RandomlyDamagedArchivesFailCleanly) {
  TempDir tmp;
  RawTar base;
  base.pax({{"path", "p/" + std::string(120, 'x')}, {"mtime", "5"}});
  base.add("short", "pax data");
  base.add("dir", "", {.type = '5', .mode = 0700});
  base.add("dir/f", std::string(700, 'f'), {.mode = 04755});
  base.add("dir/s", "", {.type = '2', .link = "../f"});
  base.add("dir/h", "", {.type = '1', .link = "dir/f"});
  base.end();
  const std::string original = base.bytes();
  const std::string box = tmp / "box";
  fs::create_directories(box);
  std::mt19937 rng(20240601);  // fixed: failures reproduce
  size_t failures = 0, successes = 0;
  for (int round = 0; round < 200; ++round) {
    std::string damaged = original;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
      damaged[rng() % damaged.size()] = static_cast<char>(rng() % 256);
    }
    if (round % 5 == 0) damaged.resize(rng() % damaged.size());
    const std::string archive = tmp / "damaged.tar";
    std::ofstream(archive, std::ios::binary | std::ios::trunc) << damaged;
    if (round % 2 == 1) {
      gzip_file(archive, tmp / "damaged.tar.gz");
      fs::rename(tmp / "damaged.tar.gz", archive);
    }
    const std::string dest = box + "/dest";
    fs::create_directories(dest);
    try {
      extract_to(archive, dest);
      ++successes;
    } catch (const TarError&) {
      ++failures;
    }
    fs::remove_all(dest);
    ASSERT_TRUE(empty_dir(box)) << "round " << round;
  }
  EXPECT_GT(failures, 0u);
  EXPECT_EQ(failures + successes, 200u);
}

// Image layers: archived owners, xattrs and special members (SpecialFiles::report, nullopt owner).
TEST(TarArchivedOwners, OwnersXattrsAndSpecialMembers) {
  ASSERT_EQ(::geteuid(), 0u) << "needs root (chown, mknod)";
  TempDir tmp;
  const std::string src = tmp / "src";
  fs::create_directories(src + "/d");
  write_file(src + "/d/f", "data", 0640);
  ASSERT_EQ(::chown((src + "/d/f").c_str(), 2001, 3002), 0);
  ASSERT_EQ(::chown((src + "/d").c_str(), 2001, 3002), 0);
  ASSERT_EQ(::setxattr((src + "/d/f").c_str(), "user.k", "v\nw", 3, 0), 0);
  ASSERT_EQ(::mknod((src + "/d/null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  ASSERT_EQ(::mkfifo((src + "/d/pipe").c_str(), 0600), 0);
  const std::string archive = tmp / "a.tar";
  run("tar --numeric-owner --xattrs --xattrs-include='user.*' -C '" + src + "' -cf '" + archive + "' d");

  // The default reader still refuses devices (build contexts never carry them).
  EXPECT_NE(list_error(archive).find(" are not allowed"), std::string::npos);  // the device or the fifo, by dir order

  std::vector<TarEntry> entries;
  {
    TarReader reader(archive, SpecialFiles::report);
    while (auto e = reader.next()) entries.push_back(*e);
  }
  const TarEntry* f = find(entries, "d/f");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->uid, 2001u);
  EXPECT_EQ(f->gid, 3002u);
  ASSERT_EQ(f->xattrs.size(), 1u);
  EXPECT_EQ(f->xattrs[0].first, "user.k");
  EXPECT_EQ(f->xattrs[0].second, "v\nw");
  const TarEntry* dev = find(entries, "d/null");
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(dev->type, EntryType::char_device);
  EXPECT_EQ(dev->dev_major, 1u);
  EXPECT_EQ(dev->dev_minor, 3u);
  ASSERT_NE(find(entries, "d/pipe"), nullptr);
  EXPECT_EQ(find(entries, "d/pipe")->type, EntryType::fifo);

  auto extract_with = [&](const std::string& dest, std::optional<ExtractOwner> owner, ExtractPolicy policy,
                          bool skip_devices) {
    fs::create_directories(dest);
    TarReader reader(archive, SpecialFiles::report);
    const int fd = ::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    try {
      extract(reader, fd, [&](const TarEntry& e) {
        return skip_devices && e.type == EntryType::char_device ? std::string() : e.path;
      }, owner, policy);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
  };
  // Devices are never created, whatever the policy.
  EXPECT_THROW(extract_with(tmp / "x1", std::nullopt, ExtractPolicy{.fifos = true, .xattrs = true}, false), TarError);
  // Fifos only when allowed.
  EXPECT_THROW(extract_with(tmp / "x2", std::nullopt, ExtractPolicy{}, true), TarError);

  const std::string kept = tmp / "kept";
  extract_with(kept, std::nullopt, ExtractPolicy{.fifos = true, .xattrs = true}, true);
  struct stat st {};
  ASSERT_EQ(::lstat((kept + "/d/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 2001u);
  EXPECT_EQ(st.st_gid, 3002u);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  ASSERT_EQ(::lstat((kept + "/d").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 2001u);
  ASSERT_EQ(::lstat((kept + "/d/pipe").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  char buf[8];
  EXPECT_EQ(::lgetxattr((kept + "/d/f").c_str(), "user.k", buf, sizeof buf), 3);

  // A fixed owner still wins over the archive's, and xattrs stay off unless asked for.
  const std::string fixed = tmp / "fixed";
  extract_with(fixed, ExtractOwner{kUid, kGid}, ExtractPolicy{.fifos = true}, true);
  ASSERT_EQ(::lstat((fixed + "/d/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kUid);
  EXPECT_EQ(st.st_gid, kGid);
  EXPECT_LT(::lgetxattr((fixed + "/d/f").c_str(), "user.k", buf, sizeof buf), 0);
}

}  // namespace
}  // namespace cove::builder
