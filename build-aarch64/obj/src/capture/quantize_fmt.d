build-aarch64/obj/src/capture/quantize_fmt.o: src/capture/quantize_fmt.c \
 src/capture/quantize_fmt.h src/engine/qconfig.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/err.h \
 src/util/strv.h src/capture/model_dir.h src/format/safetensors.h \
 src/format/json.h src/format/sha.h src/capture/quantize.h \
 src/engine/qformat.h src/format/version.h src/util/bf16.h src/util/buf.h \
 src/util/fsio.h src/util/buf.h src/util/err.h
src/capture/quantize_fmt.h:
src/engine/qconfig.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/util/strv.h:
src/capture/model_dir.h:
src/format/safetensors.h:
src/format/json.h:
src/format/sha.h:
src/capture/quantize.h:
src/engine/qformat.h:
src/format/version.h:
src/util/bf16.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
