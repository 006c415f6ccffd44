build-aarch64/obj/src/format/schema.o: src/format/schema.c \
 src/format/schema.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/pyfloat.h
src/format/schema.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/pyfloat.h:
