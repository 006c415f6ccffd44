build-aarch64/obj/src/report/report.o: src/report/report.c \
 src/report/report.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/util/buf.h src/util/err.h \
 src/compare/compare.h src/compare/stats.h src/format/npy.h \
 src/format/paths.h src/format/sha.h src/format/validate.h \
 src/format/json.h src/util/fsio.h src/util/buf.h src/util/err.h
src/report/report.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/buf.h:
src/util/err.h:
src/compare/compare.h:
src/compare/stats.h:
src/format/npy.h:
src/format/paths.h:
src/format/sha.h:
src/format/validate.h:
src/format/json.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
