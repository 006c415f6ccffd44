build-aarch64/obj/src/kernels/rowops.o: src/kernels/rowops.c \
 src/kernels/rowops.h src/kernels/../util/bf16.h
src/kernels/rowops.h:
src/kernels/../util/bf16.h:
