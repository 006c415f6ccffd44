build-aarch64/obj/src/kernels/gemm_f32.o: src/kernels/gemm_f32.c \
 src/kernels/gemm_f32.h src/kernels/gemm.h
src/kernels/gemm_f32.h:
src/kernels/gemm.h:
