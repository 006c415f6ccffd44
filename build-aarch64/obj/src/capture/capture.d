build-aarch64/obj/src/capture/capture.o: src/capture/capture.c \
 src/capture/capture.h src/engine/matmul.h src/kernels/gemm.h \
 src/util/err.h src/util/pool.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h \
 src/format/scoring_window.h src/format/json.h src/capture/panel.h \
 src/format/writer.h src/capture/qscope.h src/engine/config.h \
 src/engine/weights.h src/engine/qconfig.h src/util/strv.h \
 src/format/safetensors.h src/format/sha.h src/engine/forward.h \
 src/capture/probe.h src/capture/schedule.h src/capture/shard.h \
 src/format/digest.h src/format/sha.h src/mpi/dist.h src/util/buf.h \
 src/util/fsio.h src/util/buf.h src/util/err.h
src/capture/capture.h:
src/engine/matmul.h:
src/kernels/gemm.h:
src/util/err.h:
src/util/pool.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/scoring_window.h:
src/format/json.h:
src/capture/panel.h:
src/format/writer.h:
src/capture/qscope.h:
src/engine/config.h:
src/engine/weights.h:
src/engine/qconfig.h:
src/util/strv.h:
src/format/safetensors.h:
src/format/sha.h:
src/engine/forward.h:
src/capture/probe.h:
src/capture/schedule.h:
src/capture/shard.h:
src/format/digest.h:
src/format/sha.h:
src/mpi/dist.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
