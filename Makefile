# ddptok — build, test and run.
#
#   make              the ddptok binary (CPU backend always; CUDA when nvcc, cuBLAS and NCCL are found)
#   make CUDA=0|1     force the CUDA backend off / on
#   make DEBUG=1      -O0 -g;   make SANITIZE=1   address + undefined sanitizers
#   make test         install missing Debian packages, build, run every test (no GPU needed)
#   make protocol     the whole tutorial protocol with 2 MPI ranks (run/protocol.sh)
#   make deps         install the Debian packages the build and tests need

CC      := mpicc
PKGS    := hdf5 yaml-0.1 openblas libcrypto
CFLAGS  ?= -O2
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iinclude
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

SRC := $(wildcard src/*.c)
OBJ := $(SRC:src/%.c=build/%.o)

all: ddptok

ddptok: $(OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

build/%.o: src/%.c $(wildcard include/*.h) | build
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c -o $@ $<

build:
	mkdir -p build

# Test programs: unit tests link the library objects except main.
LIBOBJ := $(filter-out build/main.o,$(OBJ))
TEST_BINS := build/test_philox build/test_model build/test_model_broken

build/test_philox: tests/test_philox.c include/philox.h | build
	$(CC) $(CFLAGS) -o $@ $<

build/test_model: tests/test_model.c $(LIBOBJ)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

# Negative control: the same test against a backward that drops tanh's derivative.
build/model_cpu_broken.o: src/model_cpu.c $(wildcard include/*.h) | build
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -DDDPTOK_TEST_BREAK_BACKWARD -c -o $@ $<

build/test_model_broken: tests/test_model.c $(filter-out build/model_cpu.o,$(LIBOBJ)) build/model_cpu_broken.o
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

test-bins: ddptok $(TEST_BINS)

deps:
	bash run/install-deps.sh

test:
	bash run/install-deps.sh --tests
	$(MAKE) test-bins
	bash tests/run.sh

protocol:
	bash run/protocol.sh

clean:
	rm -rf build ddptok

.PHONY: all deps test test-bins protocol clean
