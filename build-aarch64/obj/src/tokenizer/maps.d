build-aarch64/obj/src/tokenizer/maps.o: src/tokenizer/maps.c \
 src/tokenizer/tok_internal.h src/tokenizer/tokenizer.h \
 src/tokenizer/../util/err.h src/tokenizer/../util/buf.h
src/tokenizer/tok_internal.h:
src/tokenizer/tokenizer.h:
src/tokenizer/../util/err.h:
src/tokenizer/../util/buf.h:
