build-aarch64/obj/tests/c/test_mkl_vml.o: tests/c/test_mkl_vml.c \
 tests/c/check.h src/util/bf16.h src/engine/mkl_vml.h \
 tests/c/mkl_vml_vectors.inc
tests/c/check.h:
src/util/bf16.h:
src/engine/mkl_vml.h:
tests/c/mkl_vml_vectors.inc:
