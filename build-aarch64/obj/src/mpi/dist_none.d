build-aarch64/obj/src/mpi/dist_none.o: src/mpi/dist_none.c src/mpi/dist.h \
 src/util/err.h
src/mpi/dist.h:
src/util/err.h:
