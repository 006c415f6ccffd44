build-aarch64/obj/src/tokenizer/nfc.o: src/tokenizer/nfc.c \
 src/tokenizer/tok_internal.h src/tokenizer/tokenizer.h \
 src/tokenizer/../util/err.h src/tokenizer/../util/buf.h \
 src/tokenizer/nfc_data.inc
src/tokenizer/tok_internal.h:
src/tokenizer/tokenizer.h:
src/tokenizer/../util/err.h:
src/tokenizer/../util/buf.h:
src/tokenizer/nfc_data.inc:
