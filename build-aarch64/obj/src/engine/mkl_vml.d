build-aarch64/obj/src/engine/mkl_vml.o: src/engine/mkl_vml.c \
 src/engine/mkl_vml.h src/util/bf16.h
src/engine/mkl_vml.h:
src/util/bf16.h:
