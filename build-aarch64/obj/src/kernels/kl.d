build-aarch64/obj/src/kernels/kl.o: src/kernels/kl.c src/kernels/kl.h \
 src/kernels/gemm.h src/kernels/kl_impl.inc
src/kernels/kl.h:
src/kernels/gemm.h:
src/kernels/kl_impl.inc:
