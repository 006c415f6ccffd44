build-aarch64/obj/src/util/strv.o: src/util/strv.c src/util/strv.h \
 src/util/buf.h
src/util/strv.h:
src/util/buf.h:
