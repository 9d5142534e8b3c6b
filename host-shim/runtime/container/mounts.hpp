#pragma once
// The mount work of a sandbox. All of it happens in private mount namespaces: the launcher's
// (layers, disk, overlay) and the sandbox's own (everything the agent sees); the host's mount
// table never gains a per-sandbox entry.
#include <array>
#include <string>
#include <vector>

namespace cove::shim::container {

// The host device nodes bound into the sandbox's /dev (CRIU treats them as external mounts).
inline constexpr std::array<const char*, 6> kHostDeviceNodes = {"null", "zero", "full", "random", "urandom", "tty"};

// Launcher: a mount namespace of its own in which nothing propagates back to the host.
void make_mounts_private();
// Launcher: overlay of `lowers` (uppermost first) with upper/work dirs, at `target`. Paths are
// best relative (the mount data is limited to one page).
void mount_overlay(const std::vector<std::string>& lowers, const std::string& upper, const std::string& work,
                   const std::string& target);

// Sandbox init, in its new mount namespace and still with its host credentials (the sandbox dir
// is root-only): makes `rootfs` a mount of its own (copied mounts are locked, pivot_root refuses
// them) and enters it.
void enter_rootfs(const std::string& rootfs);

// Sandbox init, as the sandbox's root, cwd = the new root: /proc, a minimal /dev (host's null,
// zero, full, random, urandom, tty; own devpts; /dev/shm), read-only /sys, /tmp, and /run with
// the agent's channel dir run/cove (0700).
void populate_root();

// Sandbox init: makes the cwd the root and detaches the old one, so no host path stays visible.
void pivot_to_cwd();

}  // namespace cove::shim::container
