build-aarch64/obj/src/capture/schedule.o: src/capture/schedule.c \
 src/capture/schedule.h src/capture/panel.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/format/writer.h \
 src/format/json.h src/util/err.h src/capture/probe.h src/engine/config.h \
 src/engine/matmul.h src/kernels/gemm.h src/util/pool.h \
 src/engine/weights.h src/engine/qconfig.h src/util/strv.h \
 src/format/safetensors.h src/format/sha.h src/engine/forward.h \
 src/util/buf.h
src/capture/schedule.h:
src/capture/panel.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/writer.h:
src/format/json.h:
src/util/err.h:
src/capture/probe.h:
src/engine/config.h:
src/engine/matmul.h:
src/kernels/gemm.h:
src/util/pool.h:
src/engine/weights.h:
src/engine/qconfig.h:
src/util/strv.h:
src/format/safetensors.h:
src/format/sha.h:
src/engine/forward.h:
src/util/buf.h:
