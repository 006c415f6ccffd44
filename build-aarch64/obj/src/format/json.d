build-aarch64/obj/src/format/json.o: src/format/json.c src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/fsio.h \
 src/util/buf.h src/util/err.h src/format/pyfloat.h src/format/sha.h
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
src/format/pyfloat.h:
src/format/sha.h:
