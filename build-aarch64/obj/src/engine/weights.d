build-aarch64/obj/src/engine/weights.o: src/engine/weights.c \
 src/engine/weights.h src/engine/config.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/err.h \
 src/engine/qconfig.h src/util/strv.h src/format/safetensors.h \
 src/format/json.h src/format/sha.h src/engine/next_weights.h \
 src/engine/weights_quant.h src/util/buf.h src/util/fsio.h src/util/buf.h \
 src/util/err.h
src/engine/weights.h:
src/engine/config.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/engine/qconfig.h:
src/util/strv.h:
src/format/safetensors.h:
src/format/json.h:
src/format/sha.h:
src/engine/next_weights.h:
src/engine/weights_quant.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
