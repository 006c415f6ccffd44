build-aarch64/obj/src/engine/torch_ops.o: src/engine/torch_ops.c \
 src/engine/torch_ops.h src/util/bf16.h
src/engine/torch_ops.h:
src/util/bf16.h:
