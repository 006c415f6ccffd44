build-aarch64/obj/src/report/html.o: src/report/html.c \
 src/report/report.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/util/buf.h src/util/err.h \
 src/report/plots.h src/report/svg.h src/format/version.h
src/report/report.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/buf.h:
src/util/err.h:
src/report/plots.h:
src/report/svg.h:
src/format/version.h:
