build-aarch64/obj/src/engine/next_config.o: src/engine/next_config.c \
 src/engine/next_config.h src/engine/config.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/err.h \
 src/util/buf.h
src/engine/next_config.h:
src/engine/config.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/util/buf.h:
