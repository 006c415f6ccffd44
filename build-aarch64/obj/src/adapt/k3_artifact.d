build-aarch64/obj/src/adapt/k3_artifact.o: src/adapt/k3_artifact.c \
 src/adapt/k3_artifact.h src/adapt/k3.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/compare/side.h \
 src/format/digest.h src/format/json.h src/format/safetensors.h \
 src/format/sha.h src/format/sha.h src/util/fsio.h src/util/buf.h \
 src/util/err.h
src/adapt/k3_artifact.h:
src/adapt/k3.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/compare/side.h:
src/format/digest.h:
src/format/json.h:
src/format/safetensors.h:
src/format/sha.h:
src/format/sha.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
