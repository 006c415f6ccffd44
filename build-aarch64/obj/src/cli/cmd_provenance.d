build-aarch64/obj/src/cli/cmd_provenance.o: src/cli/cmd_provenance.c \
 src/cli/cli.h src/compare/submission.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/err.h \
 src/util/fsio.h src/util/buf.h src/util/err.h
src/cli/cli.h:
src/compare/submission.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
