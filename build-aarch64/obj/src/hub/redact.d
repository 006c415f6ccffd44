build-aarch64/obj/src/hub/redact.o: src/hub/redact.c src/hub/hub.h \
 src/util/buf.h src/util/err.h
src/hub/hub.h:
src/util/buf.h:
src/util/err.h:
