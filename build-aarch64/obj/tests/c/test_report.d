build-aarch64/obj/tests/c/test_report.o: tests/c/test_report.c \
 tests/c/check.h src/report/report.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/buf.h \
 src/util/err.h src/report/svg.h
tests/c/check.h:
src/report/report.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/buf.h:
src/util/err.h:
src/report/svg.h:
