build-aarch64/obj/src/capture/probe.o: src/capture/probe.c \
 src/capture/probe.h src/engine/config.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/err.h \
 src/engine/matmul.h src/kernels/gemm.h src/util/pool.h \
 src/engine/weights.h src/engine/qconfig.h src/util/strv.h \
 src/format/safetensors.h src/format/json.h src/format/sha.h \
 src/engine/forward.h src/tokenizer/tokenizer.h \
 src/tokenizer/../util/err.h src/util/bf16.h src/util/buf.h \
 src/util/fsio.h src/util/buf.h src/util/err.h
src/capture/probe.h:
src/engine/config.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/engine/matmul.h:
src/kernels/gemm.h:
src/util/pool.h:
src/engine/weights.h:
src/engine/qconfig.h:
src/util/strv.h:
src/format/safetensors.h:
src/format/json.h:
src/format/sha.h:
src/engine/forward.h:
src/tokenizer/tokenizer.h:
src/tokenizer/../util/err.h:
src/util/bf16.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
