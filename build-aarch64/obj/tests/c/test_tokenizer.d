build-aarch64/obj/tests/c/test_tokenizer.o: tests/c/test_tokenizer.c \
 tests/c/check.h src/tokenizer/tokenizer.h src/tokenizer/../util/err.h \
 src/util/fsio.h src/util/buf.h src/util/err.h
tests/c/check.h:
src/tokenizer/tokenizer.h:
src/tokenizer/../util/err.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
