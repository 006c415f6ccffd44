# fidelity: `make` builds build/fidelity; `make test` runs the whole suite
# (release + ASan/UBSan builds, Python oracles, bounded fuzzing).
#
# Every source file is compiled once per flag set into an object file with its
# header dependencies (-MMD), the objects of a flag set are archived into one
# library, and every program of that flag set links against it:
#
#   flag set   objects          library                 programs
#   release    build/obj        build/libfidelity.a     build/fidelity, build/gemm_bench
#   asan       build-asan/obj   build-asan/libfidelity.a build-asan/fidelity, build-asan/unit
#   fuzz       build-fuzz/obj   build-fuzz/libfidelity.a build-fuzz/fuzz_* (clang, libFuzzer)
#   mpi        build-mpi/obj    build-mpi/libfidelity.a build-mpi/fidelity[-testhooks] (mpicc)
#
# A touched source file rebuilds its one object, then relinks.
CC      ?= cc
# builds use every core unless the caller chose a -j (tests/run.sh runs its own pool)
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
CSTD    := -std=c17 -D_GNU_SOURCE -Isrc -Ibuild/gen -ffp-contract=off
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
LIBS    := -lcrypto -lm -lpcre2-8 -lpthread -lcurl -lyaml
OPT     := -O2 -g
SAN     := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
PREFIX  ?= /usr/local
DESTDIR ?=

LIB_SRC  := $(shell find src -name '*.c' ! -path 'src/cli/main.c' | sort) build/gen/schema_data.c
CLI_SRC  := src/cli/main.c
TEST_SRC := $(sort $(wildcard tests/c/*.c))

# intermediate files (the fuzz targets' own objects) are kept, never deleted after the link
.SECONDARY:

# objects of a flag set: $(call objs,DIR,SOURCES)
objs = $(patsubst %.c,$(1)/obj/%.o,$(2))

PHONY_EXTRA := aarch64 test-aarch64 fuzz-ub
.PHONY: $(PHONY_EXTRA) all asan fuzz mpi test test-unit test-py test-parity test-fuzz test-avx2 clean demo bench install uninstall
all: build/fidelity

# The vendored JSON Schemas are compiled into the binary (no files at run time).
SCHEMAS := schema/fidelity-dataset.schema.json schema/fidelity-comparison-receipt.schema.json
build/gen/schema_data.c: $(SCHEMAS)
	@mkdir -p build/gen
	{ for f in dataset:schema/fidelity-dataset.schema.json receipt:schema/fidelity-comparison-receipt.schema.json; do \
	    n=$${f%%:*}; p=$${f#*:}; \
	    echo "const unsigned char fd_schema_$${n}_json[] = {"; \
	    od -An -v -tx1 $$p | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	    echo '0x00};'; \
	    echo "const unsigned int fd_schema_$${n}_json_len = $$(wc -c < $$p);"; \
	  done; } > $@.tmp && mv $@.tmp $@

# ---- release
REL_OBJ := $(call objs,build,$(LIB_SRC))
build/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(OPT) -MMD -MP -c -o $@ $<
build/libfidelity.a: $(REL_OBJ)
	rm -f $@ && ar rcs $@ $^
build/fidelity: build/obj/src/cli/main.o build/libfidelity.a
	$(CC) $(OPT) -o $@ $^ $(LIBS)
# the unit tests without sanitizers (what tests/avx2.sh runs under an emulated CPU)
build/unit: $(call objs,build,$(TEST_SRC)) build/libfidelity.a
	$(CC) $(OPT) -o $@ $^ $(LIBS)

# ---- ASan + UBSan
ASAN_OBJ := $(call objs,build-asan,$(LIB_SRC))
build-asan/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(SAN) -MMD -MP -c -o $@ $<
build-asan/libfidelity.a: $(ASAN_OBJ)
	rm -f $@ && ar rcs $@ $^
build-asan/fidelity: build-asan/obj/src/cli/main.o build-asan/libfidelity.a
	$(CC) $(SAN) -o $@ $^ $(LIBS)
build-asan/unit: $(call objs,build-asan,$(TEST_SRC)) build-asan/libfidelity.a
	$(CC) $(SAN) -o $@ $^ $(LIBS)
asan: build-asan/fidelity build-asan/unit

# ---- optional MPI build (docs/MPI.md): the same sources through mpicc with
# src/mpi/dist_mpi.c enabled.  The -testhooks binary also honours
# FIDELITY_TEST_DIE_AFTER_WINDOWS (a rank that kills itself mid-capture);
# only tests/py/test_mpi.py uses it.  Only capture.c reads FD_TEST_HOOKS.
MPICC ?= mpicc
HAVE_MPICC := $(shell command -v $(MPICC) 2>/dev/null)
MPI_OBJ := $(call objs,build-mpi,$(filter-out src/capture/capture.c,$(LIB_SRC)))
build-mpi/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(MPICC) $(CSTD) -DFD_WITH_MPI $(WARN) $(OPT) -MMD -MP -c -o $@ $<
build-mpi/obj-hooks/capture.o: src/capture/capture.c
	@mkdir -p $(dir $@)
	$(MPICC) $(CSTD) -DFD_WITH_MPI -DFD_TEST_HOOKS $(WARN) $(OPT) -MMD -MP -c -o $@ $<
build-mpi/libfidelity.a: $(MPI_OBJ)
	rm -f $@ && ar rcs $@ $^
build-mpi/fidelity: build-mpi/obj/src/cli/main.o build-mpi/obj/src/capture/capture.o build-mpi/libfidelity.a
	$(MPICC) $(OPT) -o $@ $^ $(LIBS)
build-mpi/fidelity-testhooks: build-mpi/obj/src/cli/main.o build-mpi/obj-hooks/capture.o build-mpi/libfidelity.a
	$(MPICC) $(OPT) -o $@ $^ $(LIBS)
mpi: build-mpi/fidelity build-mpi/fidelity-testhooks

# ---- fuzzers: the library instrumented once (no libFuzzer main), each target links against it
FUZZERS := $(patsubst fuzz/%.c,build-fuzz/%,$(sort $(wildcard fuzz/fuzz_*.c)))
FUZZ_CFLAGS := $(CSTD) -Wall -Wextra -Werror -g -O1
FUZZ_OBJ := $(call objs,build-fuzz,$(LIB_SRC))
build-fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c -o $@ $<
build-fuzz/libfidelity.a: $(FUZZ_OBJ)
	rm -f $@ && ar rcs $@ $^
build-fuzz/%: build-fuzz/obj/fuzz/%.o build-fuzz/libfidelity.a
	clang -fsanitize=fuzzer,address,undefined -o $@ $^ $(LIBS)
fuzz: $(FUZZERS)

# The same targets with UBSan only (no ASan): 3-10x the executions a second,
# for the long campaign of the slow parsers (docs/FUZZING.md); CI runs the ASan ones.
FUZZERS_UB := $(patsubst fuzz/%.c,build-fuzz-ub/%,$(sort $(wildcard fuzz/fuzz_*.c)))
build-fuzz-ub/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,undefined -MMD -MP -c -o $@ $<
build-fuzz-ub/libfidelity.a: $(call objs,build-fuzz-ub,$(LIB_SRC))
	rm -f $@ && ar rcs $@ $^
build-fuzz-ub/%: build-fuzz-ub/obj/fuzz/%.o build-fuzz-ub/libfidelity.a
	clang -fsanitize=fuzzer,undefined -o $@ $^ $(LIBS)
fuzz-ub: $(FUZZERS_UB)

# ---- aarch64 (issue 24): the same sources through Debian's cross compiler, run
# under qemu-user (tests/aarch64.sh): the portable definitions and the NEON /
# FEAT_BF16 kernels (src/kernels/gemm_neon.c, kl_neon.c: baseline armv8-a, the
# BF16 functions carry their own target attribute and run only where HWCAP2 has BF16)
AARCH64_CC ?= aarch64-linux-gnu-gcc
# the cross compiler and the arm64 -dev libraries (Debian multiarch) both present
HAVE_AARCH64 := $(shell command -v $(AARCH64_CC) >/dev/null 2>&1 && for l in crypto pcre2-8 curl yaml; do test -e /usr/lib/aarch64-linux-gnu/lib$$l.so || exit 1; done && echo yes)
A64_OBJ := $(call objs,build-aarch64,$(LIB_SRC))
build-aarch64/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(AARCH64_CC) $(CSTD) $(WARN) $(OPT) -MMD -MP -c -o $@ $<
build-aarch64/libfidelity.a: $(A64_OBJ)
	rm -f $@ && aarch64-linux-gnu-ar rcs $@ $^
build-aarch64/fidelity: build-aarch64/obj/src/cli/main.o build-aarch64/libfidelity.a
	$(AARCH64_CC) $(OPT) -o $@ $^ $(LIBS)
build-aarch64/unit: $(call objs,build-aarch64,$(TEST_SRC)) build-aarch64/libfidelity.a
	$(AARCH64_CC) $(OPT) -o $@ $^ $(LIBS)
aarch64: build-aarch64/fidelity build-aarch64/unit

-include $(shell find build build-asan build-fuzz build-mpi build-aarch64 build-fuzz-ub -name '*.d' 2>/dev/null)

# ---- the job and the tests
# issue 4: the three steps on the flash-0.1b shape (2 of its 8 windows of 2,048 tokens: ~1 min on 2 cores)
demo: build/fidelity
	./build/fidelity demo --preset flash-0.1b --windows 2 --out build/demo

# The whole suite, steps run on a pool of $(nproc) jobs (tests/run.sh; TEST_JOBS=N to choose).
test: all build/unit asan fuzz $(if $(HAVE_MPICC),mpi) $(if $(HAVE_AARCH64),aarch64)
	bash tests/run.sh
# Named subsets of the same steps (tests/run.sh --only GROUP).
test-unit: all build/unit asan $(if $(HAVE_AARCH64),aarch64)
	bash tests/run.sh --only unit
test-py: all asan $(if $(HAVE_MPICC),mpi)
	bash tests/run.sh --only py
test-parity: all
	bash tests/run.sh --only parity
test-fuzz: fuzz
	bash tests/run.sh --only fuzz
# The kernel selftest and unit tests on an emulated AVX2-only CPU (qemu-user, Haswell model: no AVX-512).
test-avx2: all build/unit
	bash tests/avx2.sh

# The unit tests, kernel-selftest and captures/compares on aarch64 (qemu-user -cpu max and
# -cpu cortex-a72, each kernel path forced), same bits as x86-64.
test-aarch64: all aarch64
	bash tests/aarch64.sh

clean:
	rm -rf build build-asan build-fuzz build-fuzz-ub build-mpi build-aarch64

# ---- install: the binary, a man page made from its help, bash completion
install: build/fidelity
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 755 build/fidelity $(DESTDIR)$(PREFIX)/bin/fidelity
	bash tools/mkman.sh build/fidelity > $(DESTDIR)$(PREFIX)/share/man/man1/fidelity.1
	bash tools/mkcompletion.sh build/fidelity > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/fidelity
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/fidelity $(DESTDIR)$(PREFIX)/share/man/man1/fidelity.1 \
	      $(DESTDIR)$(PREFIX)/share/bash-completion/completions/fidelity

build/gemm_bench: build/obj/bench/gemm_bench.o build/libfidelity.a
	$(CC) $(OPT) -o $@ $^ $(LIBS)
build/capture_gemm_bench: build/obj/bench/capture_gemm_bench.o build/libfidelity.a
	$(CC) $(OPT) -o $@ $^ $(LIBS)

bench: all build/gemm_bench
	./build/gemm_bench
	bash bench/compare.sh
