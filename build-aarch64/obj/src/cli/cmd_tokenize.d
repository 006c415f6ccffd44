build-aarch64/obj/src/cli/cmd_tokenize.o: src/cli/cmd_tokenize.c \
 src/cli/cli.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/npy.h src/tokenizer/tokenizer.h \
 src/tokenizer/../util/err.h src/util/fsio.h src/util/buf.h \
 src/util/err.h
src/cli/cli.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/npy.h:
src/tokenizer/tokenizer.h:
src/tokenizer/../util/err.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
