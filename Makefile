# vkgrad: the two commands a fresh Debian 12 machine needs are `make run` and `make test`.
# Both install missing dependencies first (scripts/install-deps.sh is idempotent).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

CTEST_JOBS ?= 2
TIMES := build/phase-times.txt

# $(call phase,<name>,<command>): runs <command>, prints how long it took (and appends it to
# $(TIMES)), and fails if the command fails.
define phase
	@mkdir -p build; echo "==> $(1)"; start=$$(date +%s); \
	if $(2); then \
	  t=$$(( $$(date +%s) - start )); echo "==> $(1): ok in $${t}s"; \
	  printf '  %-24s %5ss  ok\n' "$(1)" "$$t" >> $(TIMES); \
	else \
	  status=$$?; t=$$(( $$(date +%s) - start )); \
	  echo "==> $(1): FAILED (exit $$status) after $${t}s"; \
	  printf '  %-24s %5ss  FAILED\n' "$(1)" "$$t" >> $(TIMES); exit $$status; \
	fi
endef

.PHONY: deps run test build format clean bench-peers

deps:
	$(call phase,install dependencies,scripts/install-deps.sh)

run: deps
	$(call phase,configure release,cmake --preset release)
	$(call phase,build release,cmake --build --preset release --target vkgrad_cli)
	build/release/tools/cli/vkgrad bench

# vkgrad's CPU figures beside PyTorch's (Debian's python3-torch, installed by --peers) and
# llama.cpp's (node-llama-cpp, which peers.py npm-installs into build/bench-peers/node if it can),
# in one sitting: one table, also in build/bench-peers/peers.md and peers.json (bench/README.md).
bench-peers:
	$(call phase,install dependencies,scripts/install-deps.sh --peers)
	$(call phase,configure release,cmake --preset release)
	$(call phase,build release,cmake --build --preset release --target vkgrad_cli)
	/usr/bin/python3 bench/peers/peers.py --vkgrad build/release/tools/cli/vkgrad --out build/bench-peers

test: deps
	@mkdir -p build; rm -f $(TIMES); start=$$(date +%s); \
	if $(MAKE) --no-print-directory test-phases; then status=0; else status=$$?; fi; \
	echo "==> make test phases:"; cat $(TIMES) 2>/dev/null || true; \
	t=$$(( $$(date +%s) - start )); \
	if [ $$status -eq 0 ]; then echo "==> make test: passed in $${t}s"; \
	else echo "==> make test: FAILED after $${t}s"; fi; \
	exit $$status

.PHONY: test-phases
test-phases:
	$(call phase,format check,tools/format.sh --check)
	$(call phase,configure ci,cmake --preset ci)
	$(call phase,build ci,cmake --build --preset ci)
	$(call phase,test ci,ctest --preset ci -j$(CTEST_JOBS) --output-on-failure)
	@cat build/ci/mesa25/unavailable.txt 2>/dev/null || true
	$(call phase,configure asan-ubsan,cmake --preset asan-ubsan)
	$(call phase,build asan-ubsan,cmake --build --preset asan-ubsan)
	$(call phase,test asan-ubsan,ctest --preset asan-ubsan -j$(CTEST_JOBS) --output-on-failure)
	@cat build/asan-ubsan/mesa25/unavailable.txt 2>/dev/null || true

build: deps
	$(call phase,configure dev,cmake --preset dev)
	$(call phase,build dev,cmake --build --preset dev)

format:
	tools/format.sh

clean:
	rm -rf build
