build-aarch64/obj/src/format/paths.o: src/format/paths.c \
 src/format/paths.h src/format/../util/err.h
src/format/paths.h:
src/format/../util/err.h:
