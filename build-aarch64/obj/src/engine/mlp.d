build-aarch64/obj/src/engine/mlp.o: src/engine/mlp.c src/engine/mlp.h \
 src/engine/forward.h src/engine/config.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/err.h \
 src/engine/matmul.h src/kernels/gemm.h src/util/pool.h \
 src/engine/weights.h src/engine/qconfig.h src/util/strv.h \
 src/format/safetensors.h src/format/json.h src/format/sha.h \
 src/engine/ops.h src/engine/kblocks.h src/engine/torch_ops.h \
 src/kernels/rowops.h src/util/bf16.h src/util/buf.h
src/engine/mlp.h:
src/engine/forward.h:
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
src/engine/ops.h:
src/engine/kblocks.h:
src/engine/torch_ops.h:
src/kernels/rowops.h:
src/util/bf16.h:
src/util/buf.h:
