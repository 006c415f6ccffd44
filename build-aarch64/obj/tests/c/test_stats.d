build-aarch64/obj/tests/c/test_stats.o: tests/c/test_stats.c \
 tests/c/check.h src/compare/stats.h src/util/err.h src/util/buf.h \
 src/util/rng.h
tests/c/check.h:
src/compare/stats.h:
src/util/err.h:
src/util/buf.h:
src/util/rng.h:
