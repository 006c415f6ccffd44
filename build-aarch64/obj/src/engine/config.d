build-aarch64/obj/src/engine/config.o: src/engine/config.c \
 src/engine/config.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/util/err.h src/engine/next_config.h \
 src/util/buf.h src/util/fsio.h src/util/buf.h src/util/err.h
src/engine/config.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/engine/next_config.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
