build-aarch64/obj/tests/c/test_dist.o: tests/c/test_dist.c \
 tests/c/check.h src/mpi/dist.h src/util/err.h
tests/c/check.h:
src/mpi/dist.h:
src/util/err.h:
