build-aarch64/obj/src/format/k3compat.o: src/format/k3compat.c \
 src/format/k3compat.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/../util/fsio.h \
 src/format/../util/buf.h src/format/../util/err.h
src/format/k3compat.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/../util/fsio.h:
src/format/../util/buf.h:
src/format/../util/err.h:
