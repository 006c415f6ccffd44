build-aarch64/obj/src/format/validate_meaning.o: \
 src/format/validate_meaning.c src/format/validate_util.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/format/validate.h src/format/npy.h src/format/paths.h \
 src/format/sha.h src/format/../util/fsio.h src/format/../util/buf.h \
 src/format/../util/err.h
src/format/validate_util.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/validate.h:
src/format/npy.h:
src/format/paths.h:
src/format/sha.h:
src/format/../util/fsio.h:
src/format/../util/buf.h:
src/format/../util/err.h:
