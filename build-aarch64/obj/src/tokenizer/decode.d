build-aarch64/obj/src/tokenizer/decode.o: src/tokenizer/decode.c \
 src/tokenizer/tok_internal.h src/tokenizer/tokenizer.h \
 src/tokenizer/../util/err.h src/tokenizer/../util/buf.h
src/tokenizer/tok_internal.h:
src/tokenizer/tokenizer.h:
src/tokenizer/../util/err.h:
src/tokenizer/../util/buf.h:
