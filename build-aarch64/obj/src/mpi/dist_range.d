build-aarch64/obj/src/mpi/dist_range.o: src/mpi/dist_range.c \
 src/mpi/dist.h src/util/err.h
src/mpi/dist.h:
src/util/err.h:
