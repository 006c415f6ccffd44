build-aarch64/obj/src/engine/matmul.o: src/engine/matmul.c \
 src/engine/matmul.h src/kernels/gemm.h src/util/err.h src/util/pool.h \
 src/kernels/gemm_f32.h src/kernels/gemm.h src/kernels/rowops.h \
 src/util/buf.h
src/engine/matmul.h:
src/kernels/gemm.h:
src/util/err.h:
src/util/pool.h:
src/kernels/gemm_f32.h:
src/kernels/gemm.h:
src/kernels/rowops.h:
src/util/buf.h:
