build-aarch64/obj/src/report/plots.o: src/report/plots.c \
 src/report/plots.h src/report/report.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/buf.h \
 src/util/err.h src/report/svg.h src/compare/stats.h
src/report/plots.h:
src/report/report.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/buf.h:
src/util/err.h:
src/report/svg.h:
src/compare/stats.h:
