build-aarch64/obj/src/format/validate.o: src/format/validate.c \
 src/format/validate.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/validate_util.h \
 src/format/checksums.h src/format/../util/strv.h src/format/digest.h \
 src/format/paths.h src/format/schema.h src/format/sha.h \
 src/format/../util/fsio.h src/format/../util/buf.h \
 src/format/../util/err.h
src/format/validate.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/validate_util.h:
src/format/checksums.h:
src/format/../util/strv.h:
src/format/digest.h:
src/format/paths.h:
src/format/schema.h:
src/format/sha.h:
src/format/../util/fsio.h:
src/format/../util/buf.h:
src/format/../util/err.h:
