build-aarch64/obj/src/hub/http.o: src/hub/http.c src/hub/hub.h \
 src/util/buf.h src/util/err.h
src/hub/hub.h:
src/util/buf.h:
src/util/err.h:
