build-aarch64/obj/src/engine/topk.o: src/engine/topk.c src/engine/ops.h \
 src/engine/matmul.h src/kernels/gemm.h src/util/err.h src/util/pool.h \
 src/engine/weights.h src/engine/config.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/engine/qconfig.h \
 src/util/strv.h src/format/safetensors.h src/format/json.h \
 src/format/sha.h
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
