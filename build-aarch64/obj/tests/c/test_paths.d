build-aarch64/obj/tests/c/test_paths.o: tests/c/test_paths.c \
 tests/c/check.h src/format/checksums.h src/format/../util/err.h \
 src/format/../util/strv.h src/format/paths.h
tests/c/check.h:
src/format/checksums.h:
src/format/../util/err.h:
src/format/../util/strv.h:
src/format/paths.h:
