build-aarch64/obj/tests/c/test_json.o: tests/c/test_json.c \
 tests/c/check.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/pyfloat.h src/format/sha.h
tests/c/check.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/pyfloat.h:
src/format/sha.h:
