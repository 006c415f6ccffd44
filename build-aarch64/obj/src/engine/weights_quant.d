build-aarch64/obj/src/engine/weights_quant.o: src/engine/weights_quant.c \
 src/engine/weights_quant.h src/engine/weights.h src/engine/config.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/util/err.h src/engine/qconfig.h src/util/strv.h \
 src/format/safetensors.h src/format/json.h src/format/sha.h \
 src/engine/qformat.h src/util/bf16.h src/util/buf.h
src/engine/weights_quant.h:
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
src/engine/qformat.h:
src/util/bf16.h:
src/util/buf.h:
