build-aarch64/obj/src/util/fsio.o: src/util/fsio.c src/util/fsio.h \
 src/util/buf.h src/util/err.h
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
