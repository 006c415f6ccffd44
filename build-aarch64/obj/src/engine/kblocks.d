build-aarch64/obj/src/engine/kblocks.o: src/engine/kblocks.c \
 src/engine/kblocks.h
src/engine/kblocks.h:
