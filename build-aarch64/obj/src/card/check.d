build-aarch64/obj/src/card/check.o: src/card/check.c src/card/card.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/util/buf.h src/util/err.h src/util/fsio.h src/util/buf.h \
 src/util/err.h
src/card/card.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/buf.h:
src/util/err.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
