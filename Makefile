# Front door for building and testing kiln. CMake does the real work in build/;
# `make` builds build/kiln, `make test` installs what is missing and runs every test,
# `make demo` runs kiln end to end on a real input, `make install` installs libkiln, its
# headers, the tool and the plugins under $(PREFIX).
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps test demo install asan tsan fuzz release clean

all: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

deps:
	bash scripts/install-deps.sh

# OpenMP threads (the cpu backend's pool) sleep instead of spinning while idle: ctest
# runs tests in parallel on few cores, where spinning threads starve each other.
export OMP_WAIT_POLICY ?= passive

test: deps all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: deps all
	bash scripts/demo.sh $(BUILD)/kiln

# include/kiln/*.h, lib/libkiln.so* + libkiln.a, bin/kiln, lib/kiln/plugins,
# lib/pkgconfig/kiln.pc and lib/cmake/kiln (find_package(kiln)) under $(PREFIX).
install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

# Unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer is on
# by default with ASan on Linux). The TF.js model tests take their quick set there
# (KILN_TEST_QUICK): the full set already ran optimised in `make test`.
asan:
	cmake -S . -B build-asan -G Ninja -DKILN_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-asan -j $(JOBS)
	cd build-asan && KILN_TEST_QUICK=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# The tests labelled `tsan` (concurrent runs of one model through the public API) under
# ThreadSanitizer in build-tsan/. No such test is a failure (--no-tests=error), never a
# silent pass. OMP_NUM_THREADS=1: libgomp is not built with TSan, so the barriers and
# task queues of its thread pool are invisible to it and every kernel that splits its
# work over OpenMP would report false races between pool threads; with one OpenMP
# thread per run the races TSan reports are the ones between the caller's threads.
# tests/tsan.supp drops the one report of uninstrumented oneDNN's lazy initialisation.
tsan:
	cmake -S . -B build-tsan -G Ninja -DKILN_TSAN=ON
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && OMP_NUM_THREADS=1 \
	  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	  ctest -L tsan --no-tests=error --output-on-failure -j $(JOBS)

# The optimized Release configuration compiles warning-free too: gcc at -O3 reports
# maybe-uninitialized paths that -O2 does not, and -Werror makes those build failures.
release:
	cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release
	cmake --build build-release -j $(JOBS)

# Short bounded libFuzzer runs of every fuzz target (needs clang).
fuzz:
	bash scripts/fuzz.sh

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz build-release
