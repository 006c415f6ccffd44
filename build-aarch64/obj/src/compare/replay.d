build-aarch64/obj/src/compare/replay.o: src/compare/replay.c \
 src/compare/replay.h src/compare/side.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/kernels/gemm.h \
 src/kernels/kl.h src/kernels/gemm.h src/util/buf.h
src/compare/replay.h:
src/compare/side.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/kernels/gemm.h:
src/kernels/kl.h:
src/kernels/gemm.h:
src/util/buf.h:
