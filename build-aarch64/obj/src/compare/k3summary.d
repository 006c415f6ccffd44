build-aarch64/obj/src/compare/k3summary.o: src/compare/k3summary.c \
 src/compare/k3summary.h src/compare/side.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/compare/stats.h \
 src/util/err.h
src/compare/k3summary.h:
src/compare/side.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/compare/stats.h:
src/util/err.h:
