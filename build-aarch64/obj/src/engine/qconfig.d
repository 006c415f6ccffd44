build-aarch64/obj/src/engine/qconfig.o: src/engine/qconfig.c \
 src/engine/qconfig.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/util/err.h src/util/strv.h src/util/buf.h \
 src/util/fsio.h src/util/buf.h src/util/err.h
src/engine/qconfig.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/util/strv.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
