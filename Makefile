# opreview: one Makefile. `make deps` installs Debian packages, `make` builds,
# `make test` runs every test, `make review` runs the default profile.
CC      ?= cc
PKGS    := papi libfyaml jansson libcmark-gfm xlsxwriter libsodium sqlite3
DEBS    := gcc make pkg-config libpapi-dev libfyaml-dev libjansson-dev \
           libcmark-gfm-dev libcmark-gfm-extensions-dev libxlsxwriter-dev \
           libsodium-dev libsqlite3-dev libcmocka-dev python3 python3-openpyxl qemu-user
BENCH_DEBS := libdnnl-dev libopenblas-dev
FUZZ_DEBS  := clang libclang-rt-14-dev

GIT_REV := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
# -Wno-format-truncation: snprintf into fixed path buffers is the intended
# bound (paths are length-checked where they enter); gcc cannot see that.
# clang (make fuzz) has no such warning and would reject the option; its
# -Wpedantic also counts the conv kernel's inline assembly (one string of
# 4.6 KB) against C's 4095-character minimum for literals.
WARN    := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Werror \
           $(if $(findstring clang,$(CC)),-Wno-overlength-strings,-Wno-format-truncation)
OPT     ?= -O2 -g
# -ffp-contract=off: fp16/bf16 rounding must not depend on contraction; fast
# kernels use explicit FMA intrinsics instead.
ARCH    := -ffp-contract=off
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
ALL_CFLAGS = -std=c11 -D_DEFAULT_SOURCE -D_GNU_SOURCE $(WARN) $(ARCH) $(OPT) \
             -DOPR_GIT_REVISION='"$(GIT_REV)"' -DOPR_CFLAGS='"$(OPT) $(ARCH)"' \
             $(PKG_CFLAGS) $(SAN) $(CFLAGS)
ALL_LIBS   = $(PKG_LIBS) -lsde -lm -lpthread $(SAN) $(LDFLAGS)

B       := build$(if $(SAN),-san)
LIB_SRC := opreview_error.c opreview_cli.c opreview_util.c opreview_fs.c $(wildcard ops/*.c collect/*.c analyze/*.c report/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
TESTS   := $(patsubst tests/%.c,$(B)/tests/%,$(wildcard tests/test_*.c))

.PHONY: all deps test review bench golden asan clean fuzz fuzz-build valgrind test-cpus cuda test-cuda bench-cuda
all: opreview

# A sanitizer build links its own binary, so ./opreview stays the plain one.
BIN     := $(if $(SAN),$(B)/opreview,opreview)
ifneq ($(BIN),opreview)
.PHONY: opreview
opreview: $(BIN)
endif

$(BIN): $(B)/opreview.o $(LIB_OBJ)
	$(CC) -o $@ $^ $(ALL_LIBS)

$(B)/%.o: %.c $(wildcard *.h */*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/tests/%: tests/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB_OBJ) $(ALL_LIBS) -lcmocka

# Installs what is missing, and only that; idempotent.
deps:
	@missing=""; for p in $(DEBS) $(EXTRA_DEBS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null || exit 1; \
	else echo "deps: all Debian packages present"; fi

test: deps
	@$(MAKE) --no-print-directory opreview tests-build
	@OPREVIEW=./$(BIN) B=$(B) sh tests/run.sh $(TESTS)

tests-build: $(TESTS)

# The cmocka binaries on emulated older CPUs (qemu-user; its TCG has AVX2 but
# not AVX-512): each test runs the paths the model has and skips the rest.
# Slow (tens of minutes), so not part of `make test`, which runs tests/cpus.sh.
CPU_MODELS ?= Westmere Haswell
test-cpus: deps
	@$(MAKE) --no-print-directory opreview tests-build
	@fail=0; for cpu in $(CPU_MODELS); do echo "== qemu-x86_64 -cpu $$cpu"; \
	  TEST_WRAP="qemu-x86_64 -cpu $$cpu" sh tests/run.sh --binaries-only $(TESTS) || fail=1; \
	done; exit $$fail

review: deps
	@$(MAKE) --no-print-directory opreview
	@rm -rf out/review
	@./opreview run --profile fixtures/profiles/default.yaml --out out/review; rc=$$?; \
	 case $$rc in 0|10|11|12) echo "review: open out/review/packet.html (exit $$rc is the verdict; see README)";; \
	 *) exit $$rc;; esac

asan:
	@LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp ASAN_OPTIONS=detect_leaks=1 \
	 $(MAKE) --no-print-directory test SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"

golden: opreview
	@sh tests/golden.sh regenerate

bench:
	@$(MAKE) --no-print-directory deps EXTRA_DEBS="$(BENCH_DEBS)"
	@$(MAKE) --no-print-directory opreview
	@sh tests/bench.sh

# libFuzzer targets of the loaders (fuzz/), built with clang into build-fuzz/
# (the library too, with fuzzer-no-link instrumentation), each run for
# FUZZ_SECONDS from a scratch copy of its corpus fixtures/fuzz/<target>/.
FUZZ_SECONDS ?= 60
FUZZ_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=all
FUZZ_BINS = $(patsubst fuzz/%.c,$(B)/fuzz/%,$(wildcard fuzz/fuzz_*.c))

fuzz:
	@$(MAKE) --no-print-directory deps EXTRA_DEBS="$(FUZZ_DEBS)"
	@$(MAKE) --no-print-directory fuzz-build CC=clang B=build-fuzz SAN="$(FUZZ_SAN)" \
	 CFLAGS="-Wno-unknown-warning-option $(CFLAGS)"
	@FUZZ_SECONDS=$(FUZZ_SECONDS) sh fuzz/run.sh build-fuzz/fuzz

fuzz-build: $(FUZZ_BINS)

$(B)/fuzz/%: fuzz/%.c fuzz/fuzz.h $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $< $(LIB_OBJ) $(ALL_LIBS)

# The cmocka binaries under valgrind (memcheck); known library leaks are in
# tests/valgrind.supp. Slow (minutes), so not part of `make test`. Any memory
# error fails the target, and so does a leak in a binary whose tests passed. A
# test that fails at valgrind's speed (timing assertions) is only reported, with
# the leaks its failed assertion caused (cmocka skips the test's cleanup).
VG_ERRORS := Invalid |uninitialised|Mismatched free|Syscall param|overlap|Argument .size
valgrind: deps
	@command -v valgrind >/dev/null || $(MAKE) --no-print-directory deps EXTRA_DEBS=valgrind
	@$(MAKE) --no-print-directory opreview tests-build
	@fail=0; log=$(B)/valgrind.log; for t in $(TESTS); do \
	  valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    --suppressions=tests/valgrind.supp $$t >$$log 2>&1; rc=$$?; \
	  failed=$$(sed -n 's/^\[  FAILED  \] \(test_[a-z0-9_]*\)$$/\1/p' $$log | sort -u | tr '\n' ' '); \
	  leaks=$$(grep -c 'definitely lost\|indirectly lost' $$log); \
	  if grep -qE '^==[0-9]+== ($(VG_ERRORS))' $$log || { [ $$leaks != 0 ] && [ -z "$$failed" ]; } || \
	     { [ $$rc = 99 ] && [ $$leaks = 0 ]; }; then \
	    echo "not ok - $$t: memcheck errors (exit $$rc)"; grep '^==[0-9]*==' $$log | head -60; fail=1; \
	  elif [ -n "$$failed" ]; then \
	    echo "ok - $$t # failed under valgrind: $$failed($$leaks leak records after them)"; \
	  elif [ $$rc != 0 ]; then echo "not ok - $$t exited $$rc"; fail=1; \
	  else echo "ok - $$t"; fi; \
	done; exit $$fail

# ---- the CUDA backend (ops/cuda/), built only by these targets ---------------
# `make cuda` builds the backend (sm_90a: the H200's Hopper target, the
# -gencode form so no plain sm_90 pass rejects Hopper-only code) with the
# project's library into build-cuda/: the GPU tests and the benchmark. The
# default build, `make test` and CI never compile or need CUDA.
NVCC      ?= $(shell command -v nvcc 2>/dev/null || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
CUDA_ARCH ?= -gencode=arch=compute_90a,code=sm_90a
NVFLAGS    = -std=c++17 -O3 -lineinfo $(CUDA_ARCH) -D_DEFAULT_SOURCE -D_GNU_SOURCE \
             -Xcompiler -Wall,-Wextra,-Werror,-Wno-format-truncation $(NVCCFLAGS)
CB        := build-cuda
CUDA_OBJ  := $(patsubst ops/cuda/%.cu,$(CB)/ops/cuda/%.o,$(wildcard ops/cuda/*.cu))
# build-cuda/opreview: the command line with the backend linked in place of
# ops/cuda_none.c (which refuses `device: cuda` in the plain build).
CUDA_BINS := $(CB)/tests/test_cuda $(CB)/tests/test_replay $(CB)/tests/bench_cuda $(CB)/opreview
CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(NVCC)))
CUDA_LIB_OBJ = $(filter-out $(B)/ops/cuda_none.o,$(LIB_OBJ))
CUDA_LIBS  = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lstdc++ -ldl -lrt

$(CB)/ops/cuda/%.o: ops/cuda/%.cu ops/cuda/cuda.h ops/cuda/cuda_int.h $(wildcard ops/*.h) opreview.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c -o $@ $<

$(CB)/tests/%.o: tests/cuda/%.c tests/cuda/gpu.h ops/cuda/cuda.h $(wildcard *.h */*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(CB)/tests/%: $(CB)/tests/%.o $(CUDA_OBJ) $(CUDA_LIB_OBJ)
	$(CC) -o $@ $^ $(ALL_LIBS) -lcmocka $(CUDA_LIBS)

$(CB)/opreview: $(B)/opreview.o $(CUDA_OBJ) $(CUDA_LIB_OBJ)
	$(CC) -o $@ $^ $(ALL_LIBS) $(CUDA_LIBS)

cuda:
	@[ -n "$(NVCC)" ] || { echo "cuda: nvcc not found (set NVCC=/path/to/nvcc)"; exit 1; }
	@$(MAKE) --no-print-directory $(CUDA_BINS)

test-cuda: cuda
	@sh tests/run.sh --binaries-only $(CB)/tests/test_cuda $(CB)/tests/test_replay

bench-cuda: cuda
	@sh tests/cuda/bench.sh $(CB)/tests/bench_cuda

clean:
	rm -rf build build-san build-fuzz build-cuda opreview out
