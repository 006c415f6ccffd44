build-aarch64/obj/src/capture/panel_text.o: src/capture/panel_text.c \
 src/capture/panel.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/writer.h src/format/json.h \
 src/util/err.h src/tokenizer/tokenizer.h src/tokenizer/../util/err.h \
 src/format/sha.h src/util/buf.h src/util/fsio.h src/util/buf.h \
 src/util/err.h
src/capture/panel.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/writer.h:
src/format/json.h:
src/util/err.h:
src/tokenizer/tokenizer.h:
src/tokenizer/../util/err.h:
src/format/sha.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
