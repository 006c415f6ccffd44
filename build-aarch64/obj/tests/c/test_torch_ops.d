build-aarch64/obj/tests/c/test_torch_ops.o: tests/c/test_torch_ops.c \
 tests/c/check.h src/engine/torch_ops.h src/util/bf16.h \
 tests/c/torch_ops_vectors.inc
tests/c/check.h:
src/engine/torch_ops.h:
src/util/bf16.h:
tests/c/torch_ops_vectors.inc:
