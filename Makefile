# Cove. On a fresh Debian 12 machine, as root: `make up` or `make test`.
SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps build unit fuzz e2e e2e-agent e2e-shim e2e-up test bench up rootfs clean

all: build

deps:
	@tools/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

rootfs: deps
	@rootfs-builder/build-base.sh

unit: build
	ctest --test-dir $(BUILD) --output-on-failure

# libFuzzer targets (clang-14, ASan+UBSan), 60 s each by default (FUZZ_TIME=seconds).
fuzz: deps
	BUILD=$(BUILD) tests/fuzz/run.sh

# End to end through the unchanged npm e2b package: the agent alone (E2B_DEBUG mode), then the
# shim with real container sandboxes (E2B_API_URL + E2B_SANDBOX_URL).
e2e: e2e-agent e2e-shim e2e-up

e2e-agent: build
	tests/e2e/run.sh

e2e-shim: build
	COVE_BUILD_DIR=$(abspath $(BUILD)) tests/e2e/shim/run.sh

# `make up` as a user meets it, then the README's quick start pasted as written.
e2e-up: build
	BUILD=$(BUILD) tests/e2e/up/run.sh

test: build
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory fuzz
	$(MAKE) --no-print-directory e2e

bench: build
	bench/run.sh

# As root: deps, build, base rootfs, /etc/cove/cove.toml and a dev API key once, then `cove serve`
# in the foreground; clients source /var/lib/cove/client.env. Everything is reused on a second run.
up:
	@BUILD=$(BUILD) tools/up.sh

clean:
	rm -rf $(BUILD)
