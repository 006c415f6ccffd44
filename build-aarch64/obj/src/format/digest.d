build-aarch64/obj/src/format/digest.o: src/format/digest.c \
 src/format/digest.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/pyfloat.h src/format/sha.h
src/format/digest.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/pyfloat.h:
src/format/sha.h:
