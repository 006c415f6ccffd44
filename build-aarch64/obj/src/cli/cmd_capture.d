build-aarch64/obj/src/cli/cmd_capture.o: src/cli/cmd_capture.c \
 src/cli/cli.h src/capture/capture.h src/engine/matmul.h \
 src/kernels/gemm.h src/util/err.h src/util/pool.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/engine/qconfig.h \
 src/util/strv.h src/format/writer.h src/format/json.h src/mpi/dist.h \
 src/util/fsio.h src/util/buf.h src/util/err.h src/util/utc.h
src/cli/cli.h:
src/capture/capture.h:
src/engine/matmul.h:
src/kernels/gemm.h:
src/util/err.h:
src/util/pool.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/engine/qconfig.h:
src/util/strv.h:
src/format/writer.h:
src/format/json.h:
src/mpi/dist.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
src/util/utc.h:
