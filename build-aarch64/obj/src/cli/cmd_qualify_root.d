build-aarch64/obj/src/cli/cmd_qualify_root.o: src/cli/cmd_qualify_root.c \
 src/cli/cli.h src/compare/qualify.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/err.h
src/cli/cli.h:
src/compare/qualify.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
