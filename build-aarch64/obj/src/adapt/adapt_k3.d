build-aarch64/obj/src/adapt/adapt_k3.o: src/adapt/adapt_k3.c \
 src/adapt/adapt.h src/util/err.h src/adapt/k3.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h \
 src/adapt/k3_artifact.h src/compare/side.h src/format/digest.h \
 src/format/json.h src/format/safetensors.h src/format/sha.h \
 src/format/sha.h src/format/writer.h
src/adapt/adapt.h:
src/util/err.h:
src/adapt/k3.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/adapt/k3_artifact.h:
src/compare/side.h:
src/format/digest.h:
src/format/json.h:
src/format/safetensors.h:
src/format/sha.h:
src/format/sha.h:
src/format/writer.h:
