build-aarch64/obj/src/format/pyfloat.o: src/format/pyfloat.c \
 src/format/pyfloat.h
src/format/pyfloat.h:
