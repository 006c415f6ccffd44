build-aarch64/obj/tests/c/test_kblocks.o: tests/c/test_kblocks.c \
 tests/c/check.h src/engine/kblocks.h
tests/c/check.h:
src/engine/kblocks.h:
