# fidelity: `make` builds build/fidelity; `make test` runs the whole suite
# (release + ASan/UBSan builds, Python oracles, bounded fuzzing).
CC      ?= cc
# builds use every core unless the caller chose a -j (the test suite itself runs in order)
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
CSTD    := -std=c17 -D_GNU_SOURCE -Isrc -ffp-contract=off
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
LIBS    := -lcrypto -lm -lpcre2-8 -lpthread -lcurl -lyaml
OPT     := -O2 -g
SAN     := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

LIB_SRC := $(shell find src -name '*.c' ! -path 'src/cli/main.c' | sort) build/gen/schema_data.c
CLI_SRC := src/cli/main.c
TEST_SRC := $(wildcard tests/c/*.c)

.PHONY: all asan test fuzz clean demo bench mpi
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
	  done; } > $@

build/fidelity: $(LIB_SRC) $(CLI_SRC) $(shell find src -name '*.h' -o -name '*.inc')
	@mkdir -p build
	$(CC) $(CSTD) $(WARN) $(OPT) -o $@ $(LIB_SRC) $(CLI_SRC) $(LIBS)

build-asan/fidelity: $(LIB_SRC) $(CLI_SRC) $(shell find src -name '*.h' -o -name '*.inc')
	@mkdir -p build-asan
	$(CC) $(CSTD) $(WARN) $(SAN) -o $@ $(LIB_SRC) $(CLI_SRC) $(LIBS)

build-asan/unit: $(LIB_SRC) $(TEST_SRC) $(shell find src tests/c -name '*.h')
	@mkdir -p build-asan
	$(CC) $(CSTD) $(WARN) $(SAN) -Isrc -o $@ $(LIB_SRC) $(TEST_SRC) $(LIBS)

asan: build-asan/fidelity build-asan/unit

# Optional MPI build (docs/MPI.md): the same sources through mpicc with
# src/mpi/dist_mpi.c enabled.  The -testhooks binary also honours
# FIDELITY_TEST_DIE_AFTER_WINDOWS (a rank that kills itself mid-capture);
# only tests/py/test_mpi.py uses it.
MPICC ?= mpicc
HAVE_MPICC := $(shell command -v $(MPICC) 2>/dev/null)
build-mpi/fidelity build-mpi/fidelity-testhooks: $(LIB_SRC) $(CLI_SRC) $(shell find src -name '*.h' -o -name '*.inc')
	@mkdir -p build-mpi
	$(MPICC) $(CSTD) -DFD_WITH_MPI $(if $(findstring testhooks,$@),-DFD_TEST_HOOKS) $(WARN) $(OPT) -o $@ $(LIB_SRC) $(CLI_SRC) $(LIBS)

mpi: build-mpi/fidelity build-mpi/fidelity-testhooks

# The library is compiled once for all fuzzers (instrumented, no libFuzzer
# main), then each target links against it.
FUZZERS := $(patsubst fuzz/%.c,build-fuzz/%,$(wildcard fuzz/fuzz_*.c))
FUZZ_CFLAGS := $(CSTD) -Wall -Wextra -Werror -g -O1 -Isrc
FUZZ_OBJ := $(patsubst %.c,build-fuzz/obj/%.o,$(LIB_SRC))
build-fuzz/obj/%.o: %.c $(shell find src -name '*.h' -o -name '*.inc')
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c -o $@ $<
build-fuzz/%: fuzz/%.c $(FUZZ_OBJ)
	@mkdir -p build-fuzz
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_OBJ) $(LIBS)

fuzz: $(FUZZERS)

# issue 4: the three steps on the flash-0.1b shape (2 of its 8 windows of 2,048 tokens: ~1 min on 2 cores)
demo: build/fidelity
	./build/fidelity demo --preset flash-0.1b --windows 2 --out build/demo

test: all asan fuzz $(if $(HAVE_MPICC),mpi)
	bash tests/run.sh

clean:
	rm -rf build build-asan build-fuzz build-mpi

build/gemm_bench: bench/gemm_bench.c $(LIB_SRC)
	$(CC) $(CSTD) $(WARN) $(OPT) -o $@ bench/gemm_bench.c $(filter src/kernels/%.c src/util/%.c,$(LIB_SRC)) $(LIBS)

bench: all build/gemm_bench
	./build/gemm_bench
	bash bench/compare.sh
