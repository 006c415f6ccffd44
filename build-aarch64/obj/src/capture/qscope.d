build-aarch64/obj/src/capture/qscope.o: src/capture/qscope.c \
 src/capture/qscope.h src/engine/config.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/err.h \
 src/engine/weights.h src/engine/qconfig.h src/util/strv.h \
 src/format/safetensors.h src/format/json.h src/format/sha.h \
 src/engine/weights_quant.h src/format/digest.h src/util/buf.h
src/capture/qscope.h:
src/engine/config.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/engine/weights.h:
src/engine/qconfig.h:
src/util/strv.h:
src/format/safetensors.h:
src/format/json.h:
src/format/sha.h:
src/engine/weights_quant.h:
src/format/digest.h:
src/util/buf.h:
