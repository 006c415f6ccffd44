build-aarch64/obj/src/compare/qualify.o: src/compare/qualify.c \
 src/compare/qualify.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/util/err.h src/compare/compare.h \
 src/format/paths.h src/format/sha.h src/format/validate.h \
 src/format/json.h src/format/version.h src/util/fsio.h src/util/buf.h \
 src/util/err.h src/util/utc.h
src/compare/qualify.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/compare/compare.h:
src/format/paths.h:
src/format/sha.h:
src/format/validate.h:
src/format/json.h:
src/format/version.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
src/util/utc.h:
