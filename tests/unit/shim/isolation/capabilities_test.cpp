// Docker's default capability set, applied in forked children (a drop cannot be undone).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "runtime/container/capabilities.hpp"
#include "forked_child.hpp"

namespace {

using cove::shim::container::restrict_to_default_capabilities;
using cove::test::report;
using cove::test::run_in_child;

// CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE NET_RAW
// SYS_CHROOT MKNOD AUDIT_WRITE SETFCAP: what `docker run` shows as CapEff.
constexpr const char* kDockerDefaultMask = "00000000a80425fb";

bool has(cap_t caps, cap_value_t cap, cap_flag_t set) {
  cap_flag_value_t value = CAP_CLEAR;
  return cap_get_flag(caps, cap, set, &value) == 0 && value == CAP_SET;
}

// The Cap* lines a freshly exec'd program reports about itself, e.g. {"CapEff", "...."}.
std::map<std::string, std::string> capability_lines(const std::string& status) {
  std::map<std::string, std::string> lines;
  std::istringstream in(status);
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (key.rfind("Cap", 0) == 0 || key == "Uid") lines[key] = value;
  }
  return lines;
}

// Execs `program /proc/self/status` with stdout on the report fd.
[[noreturn]] void exec_status_reader(int fd, const char* program) {
  dup2(fd, 1);
  execl(program, program, "/proc/self/status", nullptr);
  report(fd, std::string("exec failed: ") + std::strerror(errno));
  _exit(127);
}

TEST(Capabilities, BoundingAndEffectiveSetsBecomeDockersDefault) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  auto outcome = run_in_child([](int fd) {
    // A private UTS namespace, so a sethostname the restriction fails to stop changes nothing.
    if (unshare(CLONE_NEWUTS) != 0) throw std::runtime_error("unshare(CLONE_NEWUTS) failed");
    restrict_to_default_capabilities();
    cap_t caps = cap_get_proc();
    std::ostringstream out;
    out << "bound_sys_admin=" << prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) << "\n"
        << "bound_net_admin=" << prctl(PR_CAPBSET_READ, CAP_NET_ADMIN, 0, 0, 0) << "\n"
        << "bound_chown=" << prctl(PR_CAPBSET_READ, CAP_CHOWN, 0, 0, 0) << "\n"
        << "bound_last=" << prctl(PR_CAPBSET_READ, CAP_LAST_CAP, 0, 0, 0) << "\n"
        << "effective_sys_admin=" << has(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE) << "\n"
        << "permitted_sys_admin=" << has(caps, CAP_SYS_ADMIN, CAP_PERMITTED) << "\n"
        << "effective_chown=" << has(caps, CAP_CHOWN, CAP_EFFECTIVE) << "\n"
        << "effective_setuid=" << has(caps, CAP_SETUID, CAP_EFFECTIVE) << "\n"
        << "inheritable_chown=" << has(caps, CAP_CHOWN, CAP_INHERITABLE) << "\n"
        << "ambient_chown=" << prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_CHOWN, 0, 0) << "\n";
    cap_free(caps);
    errno = 0;
    int rc = sethostname("cove-escape", 11);
    out << "sethostname=" << (rc == 0 ? "ok" : std::strerror(errno)) << "\n";
    report(fd, out.str());
  });
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  const std::string& o = outcome.output;
  EXPECT_NE(o.find("bound_sys_admin=0\n"), std::string::npos) << o;
  EXPECT_NE(o.find("bound_net_admin=0\n"), std::string::npos) << o;
  EXPECT_NE(o.find("bound_chown=1\n"), std::string::npos) << o;
  EXPECT_NE(o.find("bound_last=0\n"), std::string::npos) << o;
  EXPECT_NE(o.find("effective_sys_admin=0\n"), std::string::npos) << o;
  EXPECT_NE(o.find("permitted_sys_admin=0\n"), std::string::npos) << o;
  EXPECT_NE(o.find("effective_chown=1\n"), std::string::npos) << o;
  EXPECT_NE(o.find("effective_setuid=1\n"), std::string::npos) << o;
  EXPECT_NE(o.find("inheritable_chown=0\n"), std::string::npos) << o;
  EXPECT_NE(o.find("ambient_chown=0\n"), std::string::npos) << o;
  EXPECT_NE(o.find("sethostname=Operation not permitted\n"), std::string::npos) << o;
}

TEST(Capabilities, RootExecGetsExactlyTheDefaultSet) {
  auto outcome = run_in_child([](int fd) {
    restrict_to_default_capabilities();
    exec_status_reader(fd, "/bin/cat");
  });
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  auto caps = capability_lines(outcome.output);
  EXPECT_EQ(caps["CapEff"], kDockerDefaultMask) << outcome.output;
  EXPECT_EQ(caps["CapPrm"], kDockerDefaultMask) << outcome.output;
  EXPECT_EQ(caps["CapBnd"], kDockerDefaultMask) << outcome.output;
  EXPECT_EQ(caps["CapInh"], "0000000000000000") << outcome.output;
  EXPECT_EQ(caps["CapAmb"], "0000000000000000") << outcome.output;
}

// What sudo relies on: a normal user who execs a setuid-root program gets root with the default
// set back (from the bounding set), and nothing beyond it.
TEST(Capabilities, SetuidRootProgramRunByAUserGetsTheDefaultSet) {
  std::string dir = (std::filesystem::temp_directory_path() / "cove-caps-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string program = dir + "/setuid-cat";
  std::filesystem::copy_file("/bin/cat", program);
  ASSERT_EQ(chown(program.c_str(), 0, 0), 0);
  ASSERT_EQ(chmod(program.c_str(), 04755), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);

  auto outcome = run_in_child([&](int fd) {
    restrict_to_default_capabilities();
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) {
      throw std::runtime_error(std::string("cannot become nobody: ") + std::strerror(errno));
    }
    exec_status_reader(fd, program.c_str());
  });
  std::filesystem::remove_all(dir);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  auto caps = capability_lines(outcome.output);
  EXPECT_EQ(caps["CapEff"], kDockerDefaultMask) << outcome.output;
  EXPECT_EQ(caps["CapBnd"], kDockerDefaultMask) << outcome.output;
  // Real uid nobody, effective uid root.
  EXPECT_EQ(caps["Uid"].substr(0, caps["Uid"].find('\t')), "65534") << outcome.output;
  EXPECT_NE(caps["Uid"].find("\t0\t"), std::string::npos) << outcome.output;
}

}  // namespace
