build-aarch64/obj/tests/c/test_parallel.o: tests/c/test_parallel.c \
 tests/c/check.h src/engine/matmul.h src/kernels/gemm.h src/util/err.h \
 src/util/pool.h src/engine/torch_ops.h src/engine/mkl_vml.h \
 src/kernels/rowops.h src/util/bf16.h
tests/c/check.h:
src/engine/matmul.h:
src/kernels/gemm.h:
src/util/err.h:
src/util/pool.h:
src/engine/torch_ops.h:
src/engine/mkl_vml.h:
src/kernels/rowops.h:
src/util/bf16.h:
