build-aarch64/obj/src/cli/cmd_debug.o: src/cli/cmd_debug.c src/cli/cli.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/format/sha.h src/kernels/selftest.h src/kernels/gemm.h \
 src/compare/side.h src/format/ggml_quants.h src/util/err.h \
 src/format/gguf.h src/util/fsio.h src/util/buf.h src/util/err.h
src/cli/cli.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/sha.h:
src/kernels/selftest.h:
src/kernels/gemm.h:
src/compare/side.h:
src/format/ggml_quants.h:
src/util/err.h:
src/format/gguf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
