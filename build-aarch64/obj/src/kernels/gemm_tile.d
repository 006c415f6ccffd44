build-aarch64/obj/src/kernels/gemm_tile.o: src/kernels/gemm_tile.c \
 src/kernels/gemm.h
src/kernels/gemm.h:
