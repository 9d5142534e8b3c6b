#include "rootfs-builder/copy_step.hpp"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "rootfs-builder/tar_reader.hpp"

namespace cove::builder {
namespace {

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream in(path);
  std::string part;
  while (std::getline(in, part, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!out.empty()) out.pop_back();
      continue;
    }
    out.push_back(part);
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, size_t count) {
  std::string out;
  for (size_t i = 0; i < count && i < parts.size(); ++i) out += (i ? "/" : "") + parts[i];
  return out;
}

bool parse_u32(std::string_view text, uint32_t& out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && p == text.data() + text.size() && !text.empty();
}

// The directory `rel` as the layers below show it, if one of them has it.
std::optional<struct stat> lower_directory(const std::string& rel, const std::vector<std::string>& lowers) {
  for (const auto& layer : lowers) {
    struct stat st;
    std::string path = layer + "/" + rel;
    if (::lstat(path.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) return st;
      return std::nullopt;  // shadowed by something else: a new directory replaces it
    }
  }
  return std::nullopt;
}

// Creates `rel` and its parents in the layer, each as the layers below have it (or new, owned by
// `owner`), so the overlay shows existing directories unchanged.
void make_directories(const std::string& layer_dir, const std::vector<std::string>& parts, size_t count,
                      const std::vector<std::string>& lowers, UserIds owner) {
  for (size_t i = 1; i <= count; ++i) {
    std::string rel = join(parts, i);
    std::string path = layer_dir + "/" + rel;
    struct stat here;
    if (::lstat(path.c_str(), &here) == 0) {
      if (!S_ISDIR(here.st_mode)) throw std::runtime_error("COPY: a destination parent is not a directory");
      continue;
    }
    auto lower = lower_directory(rel, lowers);
    mode_t mode = lower ? lower->st_mode & 07777 : 0755;
    if (::mkdir(path.c_str(), mode) != 0) throw std::runtime_error("COPY: cannot create a destination directory");
    ::chmod(path.c_str(), mode);  // past the umask
    uid_t uid = lower ? lower->st_uid : owner.uid;
    gid_t gid = lower ? lower->st_gid : owner.gid;
    if (::lchown(path.c_str(), uid, gid) != 0) throw std::runtime_error("COPY: cannot set a directory's owner");
  }
}

bool is_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

}  // namespace

std::optional<UserIds> resolve_user(const std::string& user, const std::vector<std::string>& layers) {
  if (user.empty()) return UserIds{};
  UserIds ids;
  auto colon = user.find(':');
  if (parse_u32(user.substr(0, colon), ids.uid)) {
    if (colon == std::string::npos) {
      ids.gid = ids.uid;
      return ids;
    }
    if (parse_u32(user.substr(colon + 1), ids.gid)) return ids;
    return std::nullopt;
  }
  for (const auto& layer : layers) {
    std::ifstream passwd(layer + "/etc/passwd");
    if (!passwd) continue;
    std::string line;
    while (std::getline(passwd, line)) {
      // name:password:uid:gid:gecos:home:shell
      std::vector<std::string> f;
      std::stringstream in(line);
      std::string field;
      while (std::getline(in, field, ':')) f.push_back(field);
      if (f.size() >= 4 && f[0] == user && parse_u32(f[2], ids.uid) && parse_u32(f[3], ids.gid)) return ids;
    }
    return std::nullopt;  // the uppermost passwd decides
  }
  return std::nullopt;
}

CopyResult apply_copy(const CopyStep& step, const std::string& layer_dir, const std::vector<std::string>& lowers) {
  auto owner = resolve_user(step.user, lowers);
  if (!owner) throw std::runtime_error("COPY: unknown user");
  mode_t mode = 0;
  bool set_mode = !step.mode.empty();
  if (set_mode) mode = static_cast<mode_t>(std::stoul(step.mode, nullptr, 8)) & 07777;

  auto src_parts = components(step.src);
  std::string src = join(src_parts, src_parts.size());  // "" = the whole context
  bool glob = is_glob(src);
  std::string dest_path = step.dest[0] == '/' ? step.dest : (step.workdir.empty() ? "/" : step.workdir) + "/" + step.dest;
  bool dest_is_dir_hint = step.dest.back() == '/';
  auto dest_parts = components(dest_path);
  std::string dest = join(dest_parts, dest_parts.size());

  // Destination of a member, relative to the layer root ("" = skip).
  std::vector<std::string> placed;
  bool made_dest_dir = false;
  auto target_of = [&](const TarEntry& e) -> std::string {
    std::string top;
    std::string rest;
    if (src.empty()) {
      rest = e.path;
    } else if (!glob) {
      if (e.path == src) {
        top = src;
      } else if (e.path.rfind(src + "/", 0) == 0) {
        rest = e.path.substr(src.size() + 1);
      } else {
        return "";
      }
    } else {
      auto parts = components(e.path);
      size_t depth = 0;
      for (size_t i = 1; i <= parts.size(); ++i) {
        if (::fnmatch(src.c_str(), join(parts, i).c_str(), FNM_PATHNAME) == 0) {
          depth = i;
          break;
        }
      }
      if (depth == 0) return "";
      if (depth == parts.size()) {
        top = e.path;
      } else {
        rest = e.path.substr(join(parts, depth).size() + 1);
      }
    }
    std::string target;
    if (!top.empty()) {
      if (e.type == EntryType::directory) {
        // The source directory itself is the destination directory (made beforehand).
        return "";
      }
      bool into = dest_is_dir_hint || glob;
      target = into ? dest + (dest.empty() ? "" : "/") + components(top).back() : dest;
      if (target.empty()) throw std::runtime_error("COPY: a file cannot replace the root directory");
    } else {
      target = dest + (dest.empty() ? "" : "/") + rest;
    }
    if (!made_dest_dir) {
      // Parents of the destination as they are below; the destination dir itself for contents.
      size_t count = top.empty() || dest_is_dir_hint || glob ? dest_parts.size() : dest_parts.size() - 1;
      make_directories(layer_dir, dest_parts, count, lowers, *owner);
      made_dest_dir = true;
    }
    placed.push_back(target);
    return target;
  };

  int dir_fd = ::open(layer_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) throw std::runtime_error("COPY: cannot open the new layer");
  try {
    TarReader reader(step.archive);
    extract(reader, dir_fd, target_of, ExtractOwner{owner->uid, owner->gid});
  } catch (...) {
    ::close(dir_fd);
    throw;
  }
  ::close(dir_fd);
  if (placed.empty()) throw std::runtime_error("COPY: no uploaded file matches '" + step.src.substr(0, 200) + "'");
  if (set_mode) {
    for (const auto& rel : placed) {
      std::string path = layer_dir + "/" + rel;
      struct stat st;
      if (::lstat(path.c_str(), &st) == 0 && !S_ISLNK(st.st_mode)) ::chmod(path.c_str(), mode);
    }
  }
  return CopyResult{placed.size()};
}

}  // namespace cove::builder
