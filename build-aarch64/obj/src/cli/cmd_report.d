build-aarch64/obj/src/cli/cmd_report.o: src/cli/cmd_report.c \
 src/cli/cli.h src/report/report.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/buf.h \
 src/util/err.h
src/cli/cli.h:
src/report/report.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/buf.h:
src/util/err.h:
