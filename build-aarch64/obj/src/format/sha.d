build-aarch64/obj/src/format/sha.o: src/format/sha.c src/format/sha.h \
 src/format/../util/err.h src/util/fsio.h src/util/buf.h src/util/err.h
src/format/sha.h:
src/format/../util/err.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
