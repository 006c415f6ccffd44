build-aarch64/obj/src/format/safetensors.o: src/format/safetensors.c \
 src/format/safetensors.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/sha.h src/format/../util/fsio.h \
 src/format/../util/buf.h src/format/../util/err.h
src/format/safetensors.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/sha.h:
src/format/../util/fsio.h:
src/format/../util/buf.h:
src/format/../util/err.h:
