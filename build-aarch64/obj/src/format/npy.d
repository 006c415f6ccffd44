build-aarch64/obj/src/format/npy.o: src/format/npy.c src/format/npy.h \
 src/format/../util/buf.h src/format/../util/err.h \
 src/format/../util/fsio.h src/format/../util/buf.h \
 src/format/../util/err.h
src/format/npy.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/../util/fsio.h:
src/format/../util/buf.h:
src/format/../util/err.h:
