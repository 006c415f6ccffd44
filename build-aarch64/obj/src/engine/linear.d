build-aarch64/obj/src/engine/linear.o: src/engine/linear.c \
 src/engine/ops.h src/engine/matmul.h src/kernels/gemm.h src/util/err.h \
 src/util/pool.h src/engine/weights.h src/engine/config.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/engine/qconfig.h src/util/strv.h src/format/safetensors.h \
 src/format/json.h src/format/sha.h src/engine/kblocks.h \
 src/kernels/gemm_f32.h src/kernels/gemm.h src/kernels/rowops.h \
 src/util/bf16.h src/util/buf.h
src/engine/ops.h:
src/engine/matmul.h:
src/kernels/gemm.h:
src/util/err.h:
src/util/pool.h:
src/engine/weights.h:
src/engine/config.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/engine/qconfig.h:
src/util/strv.h:
src/format/safetensors.h:
src/format/json.h:
src/format/sha.h:
src/engine/kblocks.h:
src/kernels/gemm_f32.h:
src/kernels/gemm.h:
src/kernels/rowops.h:
src/util/bf16.h:
src/util/buf.h:
