build-aarch64/obj/src/tokenizer/model.o: src/tokenizer/model.c \
 src/tokenizer/tok_internal.h src/tokenizer/tokenizer.h \
 src/tokenizer/../util/err.h src/tokenizer/../util/buf.h \
 src/tokenizer/../format/json.h src/tokenizer/../format/../util/buf.h \
 src/tokenizer/../format/../util/err.h
src/tokenizer/tok_internal.h:
src/tokenizer/tokenizer.h:
src/tokenizer/../util/err.h:
src/tokenizer/../util/buf.h:
src/tokenizer/../format/json.h:
src/tokenizer/../format/../util/buf.h:
src/tokenizer/../format/../util/err.h:
