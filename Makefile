# Convenience front end for a fresh Debian machine: installs what is missing,
# configures CMake, builds, and runs the default example or the test suite.
#   make run    build and run the built-in default example
#   make test   build and run the whole test suite
#   make asan   build with ASan+UBSan and run the test suite
#   make bench  build optimised and run the benchmarks
#   make mpi    build the MPI variant (multi-process sweeps) in build-mpi
#   make mpi-check  2-process sweep must print and write what 1 process does
#   make fuzz   build the parser fuzz harnesses (clang) and run each FUZZ_SECONDS
BUILD ?= build
JOBS ?= 2
DEB_PKGS = build-essential cmake pkg-config libyaml-dev libcmocka-dev zlib1g-dev libzstd-dev \
           libprotobuf-c-dev protobuf-c-compiler libxgboost-dev
DEB_PKGS_MPI = libopenmpi-dev openmpi-bin
# The test suite also traces small PyTorch models on the CPU (tools/trace_torch.py);
# OpenBLAS, because Debian's torch calls the system BLAS (the reference one is ~20x slower);
# Chromium renders the HTML reports headless (tests/html/render.sh).
DEB_PKGS_TEST = python3 python3-torch python3-torchvision libopenblas0-pthread chromium

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

# The answer without a wall of build output: the build log goes to
# $(BUILD)/build.log and is shown only when the build fails.
run: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSC_WERROR=ON >/dev/null
	@echo "building (log: $(BUILD)/build.log) ..."
	@cmake --build $(BUILD) -j $(JOBS) >$(BUILD)/build.log 2>&1 || { cat $(BUILD)/build.log; exit 1; }
	@./$(BUILD)/stepcast run

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

# Bounded libFuzzer runs, one harness per parser (tests/fuzz/, cmake/fuzz.cmake):
# clang (installed if missing) builds FUZZ_BUILD with -DSC_FUZZ=ON; each harness
# then runs FUZZ_SECONDS on a copy of its seed corpus tests/fuzz/corpus-NAME
# (the corpus grows in FUZZ_BUILD/corpus-NAME; crashes land in
# FUZZ_BUILD/crash-NAME/, and make fails). FUZZERS picks harnesses.
FUZZ_SECONDS ?= 20
FUZZ_BUILD ?= build-fuzz
FUZZERS ?= config set caseset nccltests calib hf megatron gpu kineto cpu chakra scw
FUZZ_TRACE = kineto cpu chakra scw
.PHONY: fuzz-build
fuzz-build: deps
	@dpkg-query -W -f='$${Status}' clang 2>/dev/null | grep -q 'install ok installed' || \
	  (SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	   $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq clang)
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSC_FUZZ=ON -DSC_BUILD_TESTS=OFF -DSC_WERROR=ON >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers

fuzz: fuzz-build
	@set -e; for n in $(FUZZERS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus-$$n $(FUZZ_BUILD)/crash-$$n; \
	  cp tests/fuzz/corpus-$$n/* $(FUZZ_BUILD)/corpus-$$n/; \
	  echo "fuzz_$$n: $(FUZZ_SECONDS) s"; \
	  ./$(FUZZ_BUILD)/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=2048 \
	    -timeout=10 -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/crash-$$n/ \
	    $(FUZZ_BUILD)/corpus-$$n 2>$(FUZZ_BUILD)/fuzz-$$n.log || \
	    { tail -n 40 $(FUZZ_BUILD)/fuzz-$$n.log; exit 1; }; \
	  grep -E '^stat::number_of_executed_units|DONE' $(FUZZ_BUILD)/fuzz-$$n.log | tail -n 2; \
	done

# The trace harnesses only (Kineto, CPU, Chakra, .scw).
fuzz-kineto:
	$(MAKE) fuzz FUZZERS="$(FUZZ_TRACE)"
