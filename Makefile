# ddptok — build, test and run.
#
#   make              the ddptok binary (CPU backend always); with nvcc, cuBLAS and NCCL found, also
#                     the CUDA backend as a module, build/cuda/ddptok-cuda.so, which ddptok opens
#                     only for --backend cuda (one line says which)
#   make CUDA=0|1     force the CUDA backend off / on
#   make DEBUG=1      -O0 -g;   make SANITIZE=1   address + undefined sanitizers (objects in build/*-asan)
#   make test         install missing Debian packages, build, run every test (no GPU needed)
#   make fuzz         libFuzzer on the config parser, HDF5 readers, manifest and JSON readers, FUZZ_SECONDS (300) per target
#   make protocol     the whole tutorial protocol with 2 MPI ranks (run/protocol.sh)
#   make bench        ddptok vs a PyTorch DDP peer, medians over interleaved repeats (run/bench.sh;
#                     minutes, not in test; BENCH_ARGS="--load --repeats 7"); then partition bands vs
#                     balanced on the same global windows (run/bench_partition.sh); then the CPU-only
#                     vs module build's RSS and start-up, and the cost of a window against W
#                     (run/bench_scale.sh; SCALE_ARGS="--ranks '1 2 4'"); the data wait
#                     (run/bench_data.sh); import's peak RSS over input sizes and its speed
#                     beside cat | sha256sum (run/bench_import.sh; IMPORT_ARGS="--big 20G");
#                     and the GPT against PyTorch DDP and llm.c, with its step's profile
#                     (run/bench_gpt.sh; BENCH_GPT_ARGS="--shapes tiny --repeats 5")
#   make deps         install the Debian packages the build and the protocol need (make test-deps:
#                     and those of the tests)
#   make install      ddptok and ddprun into $(PREFIX)/bin (/usr/local), configs and docs into
#                     $(PREFIX)/share/ddptok (DESTDIR=... for staging); make uninstall removes them
#   make dist         ddptok-VERSION.tar.gz: HEAD (git archive) and its commit, builds outside git

CC      := mpicc
PKGS    := hdf5 yaml-0.1 openblas libcrypto jansson
CFLAGS  ?= -O2
CFLAGS  += -std=c11 -D_GNU_SOURCE -ffp-contract=off -Wall -Wextra -Iinclude
LDLIBS  := -lm

ifeq ($(DEBUG),1)
  CFLAGS += -O0 -g
endif
ifeq ($(SANITIZE),1)
  CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer
  LDFLAGS += -fsanitize=address,undefined
endif

# Library flags come from pkg-config (evaluated when a recipe runs, after `make deps`).
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

# --- CUDA backend: built when nvcc, cuBLAS and NCCL are found (or CUDA=1) ----------------
# cuda/*.cu, cuBLAS, cudart and NCCL go into one shared module, $(CUDA_MODULE); the binary
# links none of them and opens the module with dlopen when the backend is cuda
# (include/job/cuda_api.h). The binary exports exactly the symbols the module's objects call
# back (die_abort, error, g_id, ...), derived from the objects into module-imports.list.
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })
CUBLAS_LIB := $(firstword $(foreach d,$(CUDA_HOME)/lib64 $(CUDA_HOME)/lib,$(if $(wildcard $(d)/libcublas.so),$(d))))
NCCL_INC  ?= $(firstword $(foreach d,$(CUDA_HOME)/include /usr/local/include /usr/include,$(if $(wildcard $(d)/nccl.h),$(d))))
NCCL_LIB  ?= $(firstword $(foreach d,$(CUDA_HOME)/lib64 $(CUDA_HOME)/lib /usr/local/lib /usr/lib/x86_64-linux-gnu,$(if $(wildcard $(d)/libnccl.so),$(d))))
ifeq ($(CUDA),)
  CUDA := $(if $(and $(NVCC),$(CUBLAS_LIB),$(NCCL_INC),$(NCCL_LIB)),1,0)
endif
# Hopper (H100/H200) and Ampere machine code, plus PTX for anything newer.
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90

ifeq ($(CUDA),1)
  ifeq ($(MAKECMDGOALS),)
    $(info ddptok: CUDA backend: yes (nvcc $(NVCC), cuBLAS $(CUBLAS_LIB), NCCL $(NCCL_INC) $(NCCL_LIB)))
  endif
  BUILD  := build/cuda
  CFLAGS += -DDDPTOK_CUDA
  CU_SRC := $(wildcard cuda/*.cu)
  CU_OBJ := $(CU_SRC:cuda/%.cu=$(BUILD)/%.cu.o)
  # -fPIC changes the host code only: the device code (.nv_fatbin) is the same bits.
  NVFLAGS := -O2 -std=c++17 -DDDPTOK_CUDA -DOMPI_SKIP_MPICXX -Iinclude -Icuda -I$(NCCL_INC) $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-fPIC
  CUDA_LIBS := -L$(CUBLAS_LIB) -L$(NCCL_LIB) -Wl,-rpath,$(CUBLAS_LIB) -Wl,-rpath,$(NCCL_LIB) \
               -lcublas -lnccl -L$(CUDA_HOME)/lib64 -lcudart_static -lstdc++ -ldl -lrt -lpthread
  CUDA_MODULE := $(BUILD)/ddptok-cuda.so
  MODULE_IMPORTS := $(BUILD)/module-imports.list
  MAIN_LDFLAGS := -Wl,--dynamic-list=$(MODULE_IMPORTS)
  LDLIBS += -ldl
else
  ifeq ($(MAKECMDGOALS),)
    $(info ddptok: CUDA backend: no (nvcc, cuBLAS or NCCL not found, or CUDA=0): CPU backend only)
  endif
  BUILD  := build/cpu
endif
ifeq ($(SANITIZE),1)
  BUILD := $(BUILD)-asan
endif

# src/<layer>/*.c (ARCHITECTURE.md) and src/main.c; objects mirror the tree under $(BUILD).
SRC := $(wildcard src/*.c src/*/*.c)
OBJ := $(SRC:src/%.c=$(BUILD)/%.o)

# The models' wings, from the one list of models (DDPTOK_MODELS, include/config/config.h):
# a model <name>'s backend files are src/model/<name>_*.c (its CPU backend, e.g. <name>_cpu.c)
# and its CUDA twin cuda/<name>_cuda.cu, so adding a model edits no line here.
MODEL_WINGS := $(shell sed -n 's/^\#define DDPTOK_MODELS(X) //p' include/config/config.h | \
                 grep -o 'X([A-Z0-9_]*, *[a-z0-9_]*)' | cut -d, -f2 | sed 's/[^a-z0-9_]//g')
ifeq ($(strip $(MODEL_WINGS)),)
  $(error ddptok: no model in DDPTOK_MODELS (include/config/config.h))
endif
WING_CPU_OBJ  := $(foreach w,$(MODEL_WINGS),$(patsubst src/%.c,$(BUILD)/%.o,$(wildcard src/model/$(w)_*.c)))
WING_CUDA_OBJ := $(foreach w,$(MODEL_WINGS),$(BUILD)/$(w)_cuda.cu.o)
HDR := $(wildcard include/*/*.h)
BASE_SRC := $(wildcard src/base/*.c)

# `ddptok --version`: the release number in VERSION and, when known, the commit it was built
# from: "0.9.0 (abc1234)", or "0.9.0 (no git)" when none is known. The commit is DDPTOK_VERSION=... (the Docker
# build, where .git is absent), else the COMMIT file `make dist` puts in its tarball, else
# git's (only for a checkout of this tree, not a tarball unpacked inside another one).
# build/version.h is rewritten only when the version changes, so a rebuild happens exactly
# then.
VERSION_NUMBER := $(shell cat VERSION 2>/dev/null)
COMMIT  := $(or $(DDPTOK_VERSION),$(shell cat COMMIT 2>/dev/null),$(shell [ "$$(git rev-parse --show-toplevel 2>/dev/null)" = "$(CURDIR)" ] && \
             git describe --always --dirty --exclude='*' 2>/dev/null))
VERSION := $(or $(VERSION_NUMBER),unknown)$(if $(COMMIT), ($(COMMIT)), (no git))
$(shell mkdir -p build && echo '#define DDPTOK_VERSION "$(VERSION)"' > build/version.h.new && \
        { cmp -s build/version.h.new build/version.h || mv build/version.h.new build/version.h; }; rm -f build/version.h.new)

all: ddptok $(CUDA_MODULE)

$(BUILD)/app/app.o: build/version.h
$(BUILD)/app/app.o: CFLAGS += -Ibuild

# ddptok links no CUDA library; `make ddptok` builds the module too (order-only: a change
# of the module alone does not relink the binary).
ddptok: $(OBJ) $(MODULE_IMPORTS) | $(CUDA_MODULE)
	$(CC) $(LDFLAGS) $(MAIN_LDFLAGS) -o $@ $(OBJ) $(PKG_LIBS) $(LDLIBS)

$(BUILD)/%.o: src/%.c $(HDR) | $(BUILD) check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c -o $@ $<

# Before anything compiles: mpicc, pkg-config and the libraries are there, or one message
# naming the missing Debian packages and the command that installs them (make deps).
check-deps:
	@command -v $(CC) >/dev/null 2>&1 && command -v pkg-config >/dev/null 2>&1 && pkg-config --exists $(PKGS) || { \
	  echo "ddptok: cannot build: $(CC), pkg-config or a library ($(PKGS)) is missing" >&2; \
	  bash run/install-deps.sh --check; exit 2; }

# The CPU backend's element-wise loops (tanh_f32, dropout, tanh') vectorize; the select in
# tanh_f32 needs -fno-trapping-math. Neither flag reorders arithmetic: results are those
# of the scalar loops (-ffast-math stays off).
$(WING_CPU_OBJ) $(WING_CPU_OBJ:.o=_broken.o) $(BUILD)/model/cpu_kernels.o $(BUILD)/model/layers.o $(BUILD)/method/optimizer_cpu.o: CFLAGS += -ftree-vectorize -fno-trapping-math
# sqrtf vectorizes in the optimizer only without errno (√ rounds the same either way).
$(BUILD)/method/optimizer_cpu.o: CFLAGS += -fno-math-errno

$(BUILD)/%.cu.o: cuda/%.cu $(HDR) $(wildcard cuda/*.h cuda/layers/*.cuh) | $(BUILD)
	$(NVCC) $(NVFLAGS) $(shell mpicc --showme:compile 2>/dev/null) $(PKG_CFLAGS) -c -o $@ $<

# The models' twins run cuda/layers/'s rows, the CPU's C: uncontracted (no FMA), as gcc
# compiles the CPU's (-std=c11: -ffp-contract=off), so a row gives the CPU's bits.
$(WING_CUDA_OBJ): NVFLAGS += --fmad=false

# The module and the binary check on load that they were built from the same headers
# (cuda_api.h, DDPTOK_LAYOUT) and the same table (DDPTOK_CUDA_ABI).
ifeq ($(CUDA),1)
LAYOUT := $(firstword $(shell cat $(sort $(HDR)) | sha256sum))
$(BUILD)/entry.cu.o: NVFLAGS += -DDDPTOK_LAYOUT='"$(LAYOUT)"'
$(BUILD)/job/cuda_module.o: CFLAGS += -DDDPTOK_LAYOUT='"$(LAYOUT)"' -DDDPTOK_CUDA_MODULE_REL='"$(CUDA_MODULE)"'

# One exported symbol, the entry (cuda/ddptok-cuda.map); libmpi, cuBLAS and NCCL are its
# DT_NEEDED, resolved where the binary has loaded them already (libmpi) or by rpath.
$(CUDA_MODULE): $(CU_OBJ) cuda/ddptok-cuda.map
	$(CC) -shared $(LDFLAGS) -Wl,--version-script=cuda/ddptok-cuda.map -o $@ $(CU_OBJ) $(CUDA_LIBS)

# What the module's objects leave undefined and the binary's objects define.
$(MODULE_IMPORTS): $(CU_OBJ) $(OBJ)
	nm -u $(CU_OBJ) | awk '$$1 == "U" {print $$2}' | sort -u > $@.undef
	nm --defined-only --extern-only $(OBJ) | awk 'NF == 3 {print $$3}' | sort -u > $@.def
	{ echo '{'; comm -12 $@.undef $@.def | sed 's/.*/  &;/'; echo '};'; } > $@
	rm -f $@.undef $@.def
endif

$(BUILD):
	mkdir -p $@

# The base (src/base/) links alone: plain cc, no MPI, no HDF5, no other layer (OpenSSL's
# libcrypto for SHA-256 only). tests/test_unit.sh runs it.
BASE_CC ?= cc
build/test_base: tests/test_base.c $(BASE_SRC) $(wildcard include/base/*.h)
	@mkdir -p build
	$(BASE_CC) $(filter-out -Iinclude,$(CFLAGS)) -Iinclude -o $@ tests/test_base.c $(BASE_SRC) -lcrypto $(LDLIBS)

# Test programs: unit tests link the library objects except main.
LIBOBJ := $(filter-out $(BUILD)/main.o,$(OBJ))
TEST_BINS := build/test_base build/test_philox build/test_tanh build/test_kernels build/test_fd build/test_model_broken build/test_mlp_factored_broken \
             build/test_gpt_broken \
             build/ddptok-factored-broken build/test_config_roundtrip build/test_data_lock build/make_big_corpus build/bench_replay \
             build/jsonl_width build/bench_kernels

build/test_philox: tests/test_philox.c include/base/philox.h | $(BUILD)
	$(CC) $(CFLAGS) -o $@ $<

build/test_tanh: tests/test_tanh.c include/base/tanh_f32.h include/base/exp_f32.h | $(BUILD)
	$(CC) $(CFLAGS) -o $@ $< $(LDLIBS)

# Every variant of the CPU row kernel this machine runs, against the scalar definition.
# The optimizer's AdamW pass (every variant) too.
build/test_kernels: tests/test_kernels.c $(BUILD)/model/cpu_kernels.o $(BUILD)/method/optimizer_cpu.o $(BUILD)/method/optimizer.o \
                    $(patsubst src/%.c,$(BUILD)/%.o,$(BASE_SRC))
	$(CC) $(CFLAGS) -o $@ $^ -lcrypto $(LDLIBS)

# Every model's backward against finite differences: one row per model of DDPTOK_MODELS,
# tests/fd_<name>.c (tests/fd.h); `build/test_fd NAME` runs one.
FD_SRC := tests/test_fd.c tests/fd.c $(patsubst %,tests/fd_%.c,$(MODEL_WINGS))
build/test_fd: $(FD_SRC) $(LIBOBJ)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

# Negative control of the GPT's finite-difference test: GELU's derivative forgotten.
$(BUILD)/model/gpt_cpu_broken.o: src/model/gpt_cpu.c $(HDR) | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -DDDPTOK_TEST_BREAK_GELU -c -o $@ $<

build/test_gpt_broken: $(FD_SRC) $(filter-out $(BUILD)/model/gpt_cpu.o,$(LIBOBJ)) $(BUILD)/model/gpt_cpu_broken.o
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

build/test_config_roundtrip: tests/test_config_roundtrip.c $(LIBOBJ)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

build/test_data_lock: tests/test_data_lock.c $(LIBOBJ)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

# Rank 0's JSONL line at a world of W ranks, without W processes (tests/test_progress.sh).
build/jsonl_width: tests/jsonl_width.c $(LIBOBJ)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

build/make_big_corpus: tests/make_big_corpus.c $(LIBOBJ)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

# What checking a checkpoint's sampler state costs at any step (docs/checkpoints.md).
build/bench_replay: tests/bench_replay.c $(LIBOBJ)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

# Negative control: the same test against a backward that drops tanh's derivative.
$(BUILD)/model/mlp_cpu_broken.o: src/model/mlp_cpu.c $(HDR) | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -DDDPTOK_TEST_BREAK_BACKWARD -c -o $@ $<

build/test_model_broken: $(FD_SRC) $(filter-out $(BUILD)/model/mlp_cpu.o,$(LIBOBJ)) $(BUILD)/model/mlp_cpu_broken.o
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

# Negative control of the factored first layer: slot j's sums under slot j+1's id. The
# finite-difference test (test_mlp_factored_broken) and `parity` (ddptok-factored-broken,
# tests/test_parity.sh) must reject it.
$(BUILD)/model/mlp_factored_broken.o: src/model/mlp_factored.c $(HDR) | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -DDDPTOK_TEST_BREAK_FACTORED -c -o $@ $<

build/test_mlp_factored_broken: $(FD_SRC) $(filter-out $(BUILD)/model/mlp_factored.o,$(LIBOBJ)) $(BUILD)/model/mlp_factored_broken.o
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

build/ddptok-factored-broken: $(filter-out $(BUILD)/model/mlp_factored.o,$(OBJ)) $(BUILD)/model/mlp_factored_broken.o
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

# The sgemm and all-reduce ceilings of `make bench` (run/bench_kernels.c; not a test). Every
# cblas_sgemm call in it, the backends' too, goes through its __wrap_cblas_sgemm, which times
# them by call site for `bench_kernels step` (run/bench_gpt.sh); the GPT backend is compiled
# again with -g (GCC's -g changes no instruction: bench_gpt.sh compares the two objects'
# code) so that addr2line and perf name its functions and lines.
$(BUILD)/prof/model/gpt_cpu.o: src/model/gpt_cpu.c $(HDR) | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -ftree-vectorize -fno-trapping-math -g $(PKG_CFLAGS) -c -o $@ $<

build/bench_kernels: run/bench_kernels.c $(filter-out $(BUILD)/model/gpt_cpu.o,$(LIBOBJ)) $(BUILD)/prof/model/gpt_cpu.o
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Wl,--wrap=cblas_sgemm -o $@ $^ $(PKG_LIBS) $(LDLIBS)

# CPU vs GPU model check (runs on a GPU machine: run/device-check.sh). It links the module's
# objects and calls them directly, not through the module.
build/test_cuda_model: tests/test_cuda_model.c $(LIBOBJ) $(CU_OBJ)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Icuda -o $@ $^ $(PKG_LIBS) $(CUDA_LIBS) $(LDLIBS)

# The device layers' rows (cuda/layers/*.cuh, compiled by gcc as C) against the CPU's row
# kernels: no GPU and no nvcc needed.
build/test_cuda_layers: tests/test_cuda_layers.c $(BUILD)/model/cpu_kernels.o $(wildcard cuda/layers/*.cuh) $(HDR)
	$(CC) $(CFLAGS) -ftree-vectorize -fno-trapping-math -Icuda -o $@ tests/test_cuda_layers.c $(BUILD)/model/cpu_kernels.o -lm

# The CPU-only variant is built beside the CUDA one so neither can rot.
build/ddptok-cpu: $(SRC) $(HDR)
	$(MAKE) --no-print-directory CUDA=0 ddptok-cpu-inner

ddptok-cpu-inner: $(OBJ)
	$(CC) $(LDFLAGS) -o build/ddptok-cpu $^ $(PKG_LIBS) $(LDLIBS)

# The CPU-only variant with the address and undefined-behaviour sanitizers
# (tests/test_sanitize.sh runs the commands and their failure paths under it).
build/ddptok-asan: $(SRC) $(HDR)
	$(MAKE) --no-print-directory CUDA=0 SANITIZE=1 ddptok-asan-inner

ddptok-asan-inner: $(OBJ)
	$(CC) $(LDFLAGS) -o build/ddptok-asan $^ $(PKG_LIBS) $(LDLIBS)

test-bins: ddptok $(CUDA_MODULE) $(TEST_BINS) build/ddptok-cpu build/ddptok-asan $(if $(CU_OBJ),build/test_cuda_model) build/test_cuda_layers

.PHONY: check-deps
# --- Fuzzing: libFuzzer targets (clang + libclang-rt-14-dev from Debian) for the config
# parser, the HDF5 readers, the checkpoint manifest and the JSON read back, with AddressSanitizer and UBSan. The library objects are
# compiled again with clang and coverage (build/fuzz/), MPI's flags from mpicc --showme.
# `make fuzz` runs each target FUZZ_SECONDS (default 300) from the seed corpus in
# tests/fuzz/corpus/ (tests/fuzz/run.sh); tests/test_fuzz.sh runs 6000 inputs each from a fixed seed.
FUZZ_CC    ?= clang
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -DDDPTOK_FUZZ -g -O1 -Wall -Iinclude -Ibuild $(FUZZ_SAN) $(shell mpicc --showme:compile 2>/dev/null) $(PKG_CFLAGS)
FUZZ_LIBS   = $(PKG_LIBS) $(shell mpicc --showme:link 2>/dev/null) -lm
FUZZ_OBJ   := $(filter-out build/fuzz/main.o,$(SRC:src/%.c=build/fuzz/%.o))
FUZZERS    := build/fuzz/fuzz_config build/fuzz/fuzz_corpus build/fuzz/fuzz_plan build/fuzz/fuzz_checkpoint \
              build/fuzz/fuzz_manifest build/fuzz/fuzz_json
# The readers of `ddptok import` (tests/fuzz/fuzz_import.c, one target per format).
IMPORT_FUZZERS := $(foreach f,bytes llmc nanogpt megatron jsonl,build/fuzz/fuzz_import_$(f))
FUZZERS    += $(IMPORT_FUZZERS)
FUZZ_SECONDS ?= 300

build/fuzz/%.o: src/%.c $(HDR) build/version.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

build/fuzz/fuzz_config build/fuzz/fuzz_manifest build/fuzz/fuzz_json: build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $(filter-out %.h,$^) $(FUZZ_LIBS)

build/fuzz/fuzz_corpus build/fuzz/fuzz_plan build/fuzz/fuzz_checkpoint: build/fuzz/fuzz_%: tests/fuzz/fuzz_h5.c tests/fuzz/fuzz_common.h $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -DFUZZ_$(shell echo $* | tr a-z A-Z) -o $@ $(filter-out %.h,$^) $(FUZZ_LIBS)

$(IMPORT_FUZZERS): build/fuzz/fuzz_import_%: tests/fuzz/fuzz_import.c tests/fuzz/fuzz_common.h $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -DFUZZ_IMPORT_$(shell echo $* | tr a-z A-Z) -o $@ $(filter-out %.h,$^) $(FUZZ_LIBS)


fuzz-bins: $(FUZZERS)

# The CPU row kernels as clang compiles them (OMPI_CC=clang make builds ddptok with clang):
# the same bits as GCC's, which takes -ffp-contract=off (clang's default contracts a*b+c into
# one FMA where the target has it); the _contract build, with clang's default, is the
# negative control (tests/test_unit.sh).
CLANG ?= clang
CLANG_BINS := build/clang/test_kernels build/clang/test_kernels_contract
CLANG_KERNEL_SRC := src/model/cpu_kernels.c src/method/optimizer_cpu.c src/method/optimizer.c $(BASE_SRC)
build/clang/test_kernels build/clang/test_kernels_contract: build/clang/%: tests/test_kernels.c $(CLANG_KERNEL_SRC) $(HDR)
	@mkdir -p build/clang
	$(CLANG) $(CFLAGS) -ftree-vectorize -fno-trapping-math -fno-math-errno $(if $(findstring contract,$*),-ffp-contract=on) -o $@ tests/test_kernels.c $(CLANG_KERNEL_SRC) -lcrypto $(LDLIBS)

clang-bins: $(CLANG_BINS)

fuzz: fuzz-bins
	bash tests/fuzz/run.sh $(FUZZ_SECONDS)

print-cuda:
	@[ "$(CUDA)" = 1 ] && echo "CUDA_FOUND nvcc=$(NVCC) cublas=$(CUBLAS_LIB) nccl=$(NCCL_LIB) module=$(CUDA_MODULE) layout=$(LAYOUT)" || echo "CUDA_NOT_FOUND"

# make deps: what the build and the protocol need; make test-deps: that and what the tests need.
deps:
	bash run/install-deps.sh

test-deps:
	bash run/install-deps.sh --tests

# make install [PREFIX=/usr/local] [DESTDIR=...]: bin/ddptok and bin/ddprun, and under
# share/ddptok/ the configs and the documentation in the repository's layout (README.md's
# links hold). make uninstall removes exactly those files, then the share/ddptok folders
# if they are empty.
PREFIX ?= /usr/local
SHARE   = $(DESTDIR)$(PREFIX)/share/ddptok
INSTALL_CONFIGS := $(wildcard configs/*.yaml)
INSTALL_DOCS    := README.md ARCHITECTURE.md CHANGELOG.md
INSTALL_PAGES   := $(wildcard docs/*.md)
install: ddptok $(CUDA_MODULE)
	install -d $(DESTDIR)$(PREFIX)/bin $(SHARE)/configs $(SHARE)/docs
	install -m 755 ddptok run/ddprun $(DESTDIR)$(PREFIX)/bin/
	$(if $(CUDA_MODULE),install -d $(DESTDIR)$(PREFIX)/lib/ddptok && install -m 755 $(CUDA_MODULE) $(DESTDIR)$(PREFIX)/lib/ddptok/)
	install -m 644 $(INSTALL_CONFIGS) $(SHARE)/configs/
	install -m 644 $(INSTALL_DOCS) $(SHARE)/
	install -m 644 $(INSTALL_PAGES) $(SHARE)/docs/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/ddptok $(DESTDIR)$(PREFIX)/bin/ddprun $(addprefix $(SHARE)/,$(INSTALL_CONFIGS) $(INSTALL_DOCS) $(INSTALL_PAGES))
	rm -f $(DESTDIR)$(PREFIX)/lib/ddptok/ddptok-cuda.so
	for d in $(SHARE)/configs $(SHARE)/docs $(SHARE) $(DESTDIR)$(PREFIX)/lib/ddptok; do [ ! -d "$$d" ] || rmdir --ignore-fail-on-non-empty "$$d"; done

# make dist [DIST_TO=DIR]: DIR/ddptok-$(VERSION_NUMBER).tar.gz (DIR: here), HEAD as
# `git archive` gives it plus a COMMIT file, so that a build outside git still shows
# "ddptok 0.9.0 (abc1234)". Uncommitted changes are not in it (said when there are some).
DIST := ddptok-$(VERSION_NUMBER)
DIST_TO ?= .
dist:
	@git rev-parse --verify -q HEAD >/dev/null || { echo "make dist: needs the git checkout (it archives HEAD)" >&2; exit 2; }
	@git diff --quiet HEAD || echo "make dist: uncommitted changes are not in $(DIST).tar.gz (it archives HEAD)" >&2
	@mkdir -p build/dist && git rev-parse --short HEAD > build/dist/COMMIT
	git archive --format=tar --prefix=$(DIST)/ --add-file=build/dist/COMMIT HEAD | gzip -n > $(DIST_TO)/$(DIST).tar.gz
	@echo "make dist: $(DIST_TO)/$(DIST).tar.gz (commit $$(cat build/dist/COMMIT))"

test:
	bash run/install-deps.sh --tests
	$(MAKE) test-bins fuzz-bins clang-bins
	bash tests/run.sh

# The edit-build-test loop's tier (about a minute on 2 cores): the unit tests (finite
# differences, every kernel variant's bits), the configs, and the mission's three proofs on
# both models: gradient parity with the wrong formulas rejected, a resume bit-identical to the
# uninterrupted run, a globally empty window refused by every rank. `make test` runs all.
FAST_CASES := layers unit config parity:w2 parity:w3 empty:check_empty_w2 train:resume_w2 \
              gpt:parity_w2_dropout0 gpt:resume_w2 gpt:empty_bands
test-fast: test-bins
	bash tests/run.sh $(FAST_CASES)

# The Hugging Face round trip (tests/test_hf.sh) with transformers itself. transformers is not
# in Debian; the venv it goes into (build/hf-venv, ~180 MB, once) sees Debian's own torch,
# numpy, h5py and yaml (--system-site-packages: CPU-only, nothing of CUDA), and takes only
# transformers and safetensors from PyPI. transformers is pinned to 4.46.3, the release these
# tests were run with on Debian 12's torch 1.13 (transformers 5 disables torch < 2.6, and
# `pip install torch` would pull ~5.6 GB of CUDA wheels onto a CPU machine).
# `make hf-venv` builds it; `make test-hf` builds it and runs the hf group with it; the
# README's Python snippets run with build/hf-venv/bin/python. DDPTOK_HF_PYTHON=path/to/python
# points the hf group at a python of your own instead.
HF_VENV := build/hf-venv
HF_PIP := transformers==4.46.3 safetensors
$(HF_VENV)/.ready:
	bash run/install-deps.sh --hf
	rm -rf $(HF_VENV) && /usr/bin/python3 -m venv --system-site-packages $(HF_VENV)
	$(HF_VENV)/bin/pip install --quiet --disable-pip-version-check $(HF_PIP)
	$(HF_VENV)/bin/python -c "import torch, transformers; print('hf venv: torch', torch.__version__, 'transformers', transformers.__version__)"
	touch $@
hf-venv: $(HF_VENV)/.ready
test-hf: ddptok $(HF_VENV)/.ready
	DDPTOK_HF_PYTHON=$(abspath $(HF_VENV))/bin/python bash tests/run.sh hf

protocol:
	bash run/protocol.sh

bench: ddptok $(CUDA_MODULE) build/bench_kernels build/ddptok-cpu
	bash run/bench.sh $(BENCH_ARGS)
	bash run/bench_partition.sh
	bash run/bench_scale.sh $(SCALE_ARGS)
	bash run/bench_data.sh
	bash run/bench_import.sh $(IMPORT_ARGS)
	bash run/bench_gpt.sh $(BENCH_GPT_ARGS)

clean:
	rm -rf build ddptok

.PHONY: all deps test-deps install uninstall dist test test-fast hf-venv test-hf test-bins fuzz fuzz-bins clang-bins protocol bench clean ddptok-cpu-inner ddptok-asan-inner print-cuda
