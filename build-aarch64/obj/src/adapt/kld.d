build-aarch64/obj/src/adapt/kld.o: src/adapt/kld.c src/adapt/kld.h \
 src/util/err.h src/util/buf.h src/util/fsio.h src/util/buf.h \
 src/util/err.h
src/adapt/kld.h:
src/util/err.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
