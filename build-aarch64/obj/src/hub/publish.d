build-aarch64/obj/src/hub/publish.o: src/hub/publish.c src/hub/publish.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/util/err.h src/hub/hub.h src/util/buf.h src/compare/qualify.h \
 src/format/checksums.h src/format/../util/strv.h src/format/sha.h \
 src/format/validate.h src/format/json.h src/format/version.h \
 src/util/fsio.h src/util/buf.h src/util/err.h src/util/strv.h \
 src/util/utc.h
src/hub/publish.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/hub/hub.h:
src/util/buf.h:
src/compare/qualify.h:
src/format/checksums.h:
src/format/../util/strv.h:
src/format/sha.h:
src/format/validate.h:
src/format/json.h:
src/format/version.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
src/util/strv.h:
src/util/utc.h:
