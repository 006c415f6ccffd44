build-aarch64/obj/src/compare/side.o: src/compare/side.c \
 src/compare/side.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/safetensors.h src/format/json.h \
 src/format/sha.h src/format/sha.h src/format/validate.h src/util/fsio.h \
 src/util/buf.h src/util/err.h
src/compare/side.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/safetensors.h:
src/format/json.h:
src/format/sha.h:
src/format/sha.h:
src/format/validate.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
