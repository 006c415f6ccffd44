build-aarch64/obj/src/kernels/selftest.o: src/kernels/selftest.c \
 src/kernels/selftest.h src/kernels/gemm.h src/kernels/kl.h \
 src/kernels/../util/buf.h src/kernels/../util/rng.h
src/kernels/selftest.h:
src/kernels/gemm.h:
src/kernels/kl.h:
src/kernels/../util/buf.h:
src/kernels/../util/rng.h:
