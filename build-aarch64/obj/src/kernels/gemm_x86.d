build-aarch64/obj/src/kernels/gemm_x86.o: src/kernels/gemm_x86.c \
 src/kernels/gemm.h
src/kernels/gemm.h:
