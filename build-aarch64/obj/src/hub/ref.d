build-aarch64/obj/src/hub/ref.o: src/hub/ref.c src/hub/hub.h \
 src/util/buf.h src/util/err.h
src/hub/hub.h:
src/util/buf.h:
src/util/err.h:
