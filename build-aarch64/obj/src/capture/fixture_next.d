build-aarch64/obj/src/capture/fixture_next.o: src/capture/fixture_next.c \
 src/capture/fixture_next.h src/capture/fixture.h src/util/err.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/util/rng.h
src/capture/fixture_next.h:
src/capture/fixture.h:
src/util/err.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/rng.h:
