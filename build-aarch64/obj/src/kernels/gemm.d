build-aarch64/obj/src/kernels/gemm.o: src/kernels/gemm.c \
 src/kernels/gemm.h src/kernels/../util/buf.h
src/kernels/gemm.h:
src/kernels/../util/buf.h:
