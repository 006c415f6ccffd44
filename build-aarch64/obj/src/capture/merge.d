build-aarch64/obj/src/capture/merge.o: src/capture/merge.c \
 src/capture/merge.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/compare/side.h src/format/digest.h \
 src/format/json.h src/format/writer.h src/util/buf.h src/util/fsio.h \
 src/util/buf.h src/util/err.h
src/capture/merge.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/compare/side.h:
src/format/digest.h:
src/format/json.h:
src/format/writer.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
