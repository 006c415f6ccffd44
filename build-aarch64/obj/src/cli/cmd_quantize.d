build-aarch64/obj/src/cli/cmd_quantize.o: src/cli/cmd_quantize.c \
 src/cli/cli.h src/capture/quantize.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h \
 src/format/safetensors.h src/format/json.h src/format/sha.h \
 src/capture/quantize_fmt.h src/engine/qconfig.h src/util/err.h \
 src/util/strv.h src/capture/qscope.h src/engine/config.h \
 src/engine/weights.h src/util/buf.h src/util/fsio.h src/util/buf.h \
 src/util/err.h
src/cli/cli.h:
src/capture/quantize.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/safetensors.h:
src/format/json.h:
src/format/sha.h:
src/capture/quantize_fmt.h:
src/engine/qconfig.h:
src/util/err.h:
src/util/strv.h:
src/capture/qscope.h:
src/engine/config.h:
src/engine/weights.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
