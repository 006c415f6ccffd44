build-aarch64/obj/tests/c/test_gemm_f32.o: tests/c/test_gemm_f32.c \
 tests/c/check.h src/kernels/gemm_f32.h src/kernels/gemm.h
tests/c/check.h:
src/kernels/gemm_f32.h:
src/kernels/gemm.h:
