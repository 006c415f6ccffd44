build-aarch64/obj/src/kernels/gemm_scalar.o: src/kernels/gemm_scalar.c \
 src/kernels/gemm.h
src/kernels/gemm.h:
