build-aarch64/obj/src/format/reseal.o: src/format/reseal.c \
 src/format/reseal.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/checksums.h \
 src/format/../util/strv.h src/format/sha.h src/format/validate.h \
 src/format/writer.h src/format/version.h src/format/../util/fsio.h \
 src/format/../util/buf.h src/format/../util/err.h \
 src/format/../util/utc.h
src/format/reseal.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/checksums.h:
src/format/../util/strv.h:
src/format/sha.h:
src/format/validate.h:
src/format/writer.h:
src/format/version.h:
src/format/../util/fsio.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/../util/utc.h:
