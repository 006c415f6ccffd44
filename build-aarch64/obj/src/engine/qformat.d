build-aarch64/obj/src/engine/qformat.o: src/engine/qformat.c \
 src/engine/qformat.h src/util/bf16.h
src/engine/qformat.h:
src/util/bf16.h:
