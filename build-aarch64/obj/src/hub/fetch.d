build-aarch64/obj/src/hub/fetch.o: src/hub/fetch.c src/hub/hub.h \
 src/util/buf.h src/util/err.h src/format/checksums.h \
 src/format/../util/err.h src/format/../util/strv.h src/format/json.h \
 src/format/../util/buf.h src/format/paths.h src/format/safetensors.h \
 src/format/json.h src/format/sha.h src/format/sha.h src/util/fsio.h \
 src/util/buf.h src/util/err.h
src/hub/hub.h:
src/util/buf.h:
src/util/err.h:
src/format/checksums.h:
src/format/../util/err.h:
src/format/../util/strv.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/paths.h:
src/format/safetensors.h:
src/format/json.h:
src/format/sha.h:
src/format/sha.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
