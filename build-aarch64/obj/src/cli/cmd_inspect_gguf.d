build-aarch64/obj/src/cli/cmd_inspect_gguf.o: src/cli/cmd_inspect_gguf.c \
 src/cli/cli.h src/format/ggml_quants.h src/util/err.h src/format/gguf.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/util/buf.h
src/cli/cli.h:
src/format/ggml_quants.h:
src/util/err.h:
src/format/gguf.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/buf.h:
