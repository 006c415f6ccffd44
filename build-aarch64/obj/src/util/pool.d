build-aarch64/obj/src/util/pool.o: src/util/pool.c src/util/pool.h \
 src/util/buf.h
src/util/pool.h:
src/util/buf.h:
