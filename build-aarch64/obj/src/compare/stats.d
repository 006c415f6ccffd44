build-aarch64/obj/src/compare/stats.o: src/compare/stats.c \
 src/compare/stats.h src/util/err.h src/util/buf.h src/util/rng.h
src/compare/stats.h:
src/util/err.h:
src/util/buf.h:
src/util/rng.h:
