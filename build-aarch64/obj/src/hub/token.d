build-aarch64/obj/src/hub/token.o: src/hub/token.c src/hub/hub.h \
 src/util/buf.h src/util/err.h src/util/fsio.h src/util/buf.h \
 src/util/err.h
src/hub/hub.h:
src/util/buf.h:
src/util/err.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
