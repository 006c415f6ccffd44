build-aarch64/obj/src/capture/shard.o: src/capture/shard.c \
 src/capture/shard.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/validate.h src/format/json.h \
 src/util/buf.h src/util/fsio.h src/util/buf.h src/util/err.h
src/capture/shard.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/validate.h:
src/format/json.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
