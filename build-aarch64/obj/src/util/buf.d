build-aarch64/obj/src/util/buf.o: src/util/buf.c src/util/buf.h
src/util/buf.h:
