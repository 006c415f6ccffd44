build-aarch64/obj/tests/c/test_digest.o: tests/c/test_digest.c \
 tests/c/check.h src/format/digest.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/format/npy.h \
 src/format/sha.h src/util/fsio.h src/util/buf.h src/util/err.h
tests/c/check.h:
src/format/digest.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/npy.h:
src/format/sha.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
