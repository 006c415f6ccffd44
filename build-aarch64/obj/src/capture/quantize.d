build-aarch64/obj/src/capture/quantize.o: src/capture/quantize.c \
 src/capture/quantize.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/safetensors.h src/format/json.h \
 src/format/sha.h src/format/digest.h src/capture/model_dir.h \
 src/util/strv.h src/util/bf16.h src/util/buf.h src/util/fsio.h \
 src/util/buf.h src/util/err.h
src/capture/quantize.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/safetensors.h:
src/format/json.h:
src/format/sha.h:
src/format/digest.h:
src/capture/model_dir.h:
src/util/strv.h:
src/util/bf16.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
