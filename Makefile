# Convenience front end for a fresh Debian machine: installs what is missing,
# configures CMake, builds, and runs the default example or the test suite.
#   make run    build and run the built-in default example
#   make test   build and run the whole test suite
#   make asan   build with ASan+UBSan and run the test suite
#   make bench  build optimised and run the benchmarks
#   make mpi    build the MPI variant (multi-process sweeps) in build-mpi
#   make mpi-check  2-process sweep must print and write what 1 process does
BUILD ?= build
JOBS ?= 2
DEB_PKGS = build-essential cmake pkg-config libyaml-dev libcmocka-dev zlib1g-dev libzstd-dev \
           libprotobuf-c-dev protobuf-c-compiler
DEB_PKGS_MPI = libopenmpi-dev openmpi-bin
# The test suite also traces small PyTorch models on the CPU (tools/trace_torch.py);
# OpenBLAS, because Debian's torch calls the system BLAS (the reference one is ~20x slower).
DEB_PKGS_TEST = python3 python3-torch python3-torchvision libopenblas0-pthread

.PHONY: all deps deps-test build run test asan bench clean fuzz fuzz-kineto deps-mpi mpi mpi-check

all: build

deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

deps-test:
	@missing=""; for p in $(DEB_PKGS_TEST); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSC_WERROR=ON >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/stepcast run

test: build deps-test
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

asan: deps deps-test
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSC_SANITIZE=ON -DSC_WERROR=ON >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

bench: build
	./bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-asan build-fuzz build-mpi

# MPI variant: same sources, src/analysis/par_mpi.c instead of src/analysis/par_serial.c.
deps-mpi: deps
	@missing=""; for p in $(DEB_PKGS_MPI); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

mpi: deps-mpi
	cmake -S . -B build-mpi -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSC_MPI=ON -DSC_WERROR=ON >/dev/null
	cmake --build build-mpi -j $(JOBS)

mpi-check: build mpi
	tests/sweep/mpi_equal.sh ./$(BUILD)/stepcast ./build-mpi/stepcast

# Bounded libFuzzer run of the config parser (needs clang; installed if missing).
FUZZ_SECONDS ?= 30
fuzz: deps
	@dpkg-query -W -f='$${Status}' clang 2>/dev/null | grep -q 'install ok installed' || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang)
	mkdir -p build-fuzz
	mkdir -p build-fuzz/proto && protoc-c --c_out=build-fuzz/proto -Isrc/trace src/trace/chakra_et.proto
	clang -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=fuzzer,address,undefined \
	  -Iinclude -Isrc -Ibuild-fuzz/proto tests/fuzz/fuzz_config.c src/*/*.c build-fuzz/proto/chakra_et.pb-c.c \
	  $$(pkg-config --cflags --libs $(FUZZ_PKGS)) -lm -o build-fuzz/fuzz_config
	mkdir -p build-fuzz/corpus && cp tests/fuzz/corpus/* build-fuzz/corpus/
	./build-fuzz/fuzz_config -max_total_time=$(FUZZ_SECONDS) -max_len=4096 build-fuzz/corpus

# Bounded libFuzzer run of trace import (Kineto, Chakra) and the .scw reader.
FUZZ_PKGS = yaml-0.1 zlib libzstd libprotobuf-c
fuzz-kineto: deps
	@dpkg-query -W -f='$${Status}' clang 2>/dev/null | grep -q 'install ok installed' || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang)
	mkdir -p build-fuzz/proto && protoc-c --c_out=build-fuzz/proto -Isrc/trace src/trace/chakra_et.proto
	clang -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=fuzzer,address,undefined \
	  -Iinclude -Isrc -Ibuild-fuzz/proto tests/fuzz/fuzz_kineto.c src/*/*.c build-fuzz/proto/chakra_et.pb-c.c \
	  $$(pkg-config --cflags --libs $(FUZZ_PKGS)) -lm -o build-fuzz/fuzz_kineto
	mkdir -p build-fuzz/corpus-trace && cp tests/fuzz/corpus-trace/* build-fuzz/corpus-trace/
	./build-fuzz/fuzz_kineto -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=1024 build-fuzz/corpus-trace
