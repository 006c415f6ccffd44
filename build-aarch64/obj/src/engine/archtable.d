build-aarch64/obj/src/engine/archtable.o: src/engine/archtable.c \
 src/engine/archtable.h
src/engine/archtable.h:
