build-aarch64/obj/tests/c/test_checksums.o: tests/c/test_checksums.c \
 tests/c/check.h src/format/checksums.h src/format/../util/err.h \
 src/format/../util/strv.h src/format/sha.h src/util/fsio.h \
 src/util/buf.h src/util/err.h
tests/c/check.h:
src/format/checksums.h:
src/format/../util/err.h:
src/format/../util/strv.h:
src/format/sha.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
