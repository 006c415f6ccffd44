build-aarch64/obj/src/compare/compare.o: src/compare/compare.c \
 src/compare/compare.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/compare/gates.h src/compare/side.h \
 src/compare/k3summary.h src/compare/replay.h src/kernels/gemm.h \
 src/compare/stats.h src/util/err.h src/format/npy.h src/format/paths.h \
 src/format/sha.h src/format/version.h src/kernels/kl.h \
 src/kernels/gemm.h src/mpi/dist.h src/util/fsio.h src/util/buf.h \
 src/util/err.h src/util/utc.h src/compare/k3emit.inc \
 src/compare/receipt.inc
src/compare/compare.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/compare/gates.h:
src/compare/side.h:
src/compare/k3summary.h:
src/compare/replay.h:
src/kernels/gemm.h:
src/compare/stats.h:
src/util/err.h:
src/format/npy.h:
src/format/paths.h:
src/format/sha.h:
src/format/version.h:
src/kernels/kl.h:
src/kernels/gemm.h:
src/mpi/dist.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
src/util/utc.h:
src/compare/k3emit.inc:
src/compare/receipt.inc:
