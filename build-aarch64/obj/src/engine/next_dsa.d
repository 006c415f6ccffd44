build-aarch64/obj/src/engine/next_dsa.o: src/engine/next_dsa.c \
 src/engine/next_internal.h src/engine/next_config.h src/engine/config.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/util/err.h src/engine/next_forward.h src/engine/matmul.h \
 src/kernels/gemm.h src/util/pool.h src/engine/weights.h \
 src/engine/qconfig.h src/util/strv.h src/format/safetensors.h \
 src/format/json.h src/format/sha.h src/engine/next_weights.h \
 src/engine/ops.h src/util/bf16.h src/engine/torch_ops.h src/util/buf.h
src/engine/next_internal.h:
src/engine/next_config.h:
src/engine/config.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/engine/next_forward.h:
src/engine/matmul.h:
src/kernels/gemm.h:
src/util/pool.h:
src/engine/weights.h:
src/engine/qconfig.h:
src/util/strv.h:
src/format/safetensors.h:
src/format/json.h:
src/format/sha.h:
src/engine/next_weights.h:
src/engine/ops.h:
src/util/bf16.h:
src/engine/torch_ops.h:
src/util/buf.h:
