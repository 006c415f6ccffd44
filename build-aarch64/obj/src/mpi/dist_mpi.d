build-aarch64/obj/src/mpi/dist_mpi.o: src/mpi/dist_mpi.c
