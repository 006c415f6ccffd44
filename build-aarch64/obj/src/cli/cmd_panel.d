build-aarch64/obj/src/cli/cmd_panel.o: src/cli/cmd_panel.c src/cli/cli.h \
 src/capture/panel.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/writer.h src/format/json.h \
 src/util/err.h src/tokenizer/tokenizer.h src/tokenizer/../util/err.h
src/cli/cli.h:
src/capture/panel.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/writer.h:
src/format/json.h:
src/util/err.h:
src/tokenizer/tokenizer.h:
src/tokenizer/../util/err.h:
