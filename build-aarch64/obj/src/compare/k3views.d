build-aarch64/obj/src/compare/k3views.o: src/compare/k3views.c \
 src/compare/k3summary.h src/compare/side.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/format/k3compat.h \
 src/format/json.h src/format/sha.h src/util/fsio.h src/util/buf.h \
 src/util/err.h
src/compare/k3summary.h:
src/compare/side.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/k3compat.h:
src/format/json.h:
src/format/sha.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
