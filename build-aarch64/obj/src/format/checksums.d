build-aarch64/obj/src/format/checksums.o: src/format/checksums.c \
 src/format/checksums.h src/format/../util/err.h \
 src/format/../util/strv.h src/format/paths.h src/format/sha.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/fsio.h \
 src/format/../util/buf.h src/format/../util/err.h
src/format/checksums.h:
src/format/../util/err.h:
src/format/../util/strv.h:
src/format/paths.h:
src/format/sha.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/fsio.h:
src/format/../util/buf.h:
src/format/../util/err.h:
