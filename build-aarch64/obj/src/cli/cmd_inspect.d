build-aarch64/obj/src/cli/cmd_inspect.o: src/cli/cmd_inspect.c \
 src/cli/cli.h src/engine/config.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/err.h \
 src/engine/weights.h src/engine/qconfig.h src/util/strv.h \
 src/format/safetensors.h src/format/json.h src/format/sha.h \
 src/util/buf.h
src/cli/cli.h:
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
src/util/buf.h:
