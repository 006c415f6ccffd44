build-aarch64/obj/src/cli/cmd_publish.o: src/cli/cmd_publish.c \
 src/cli/cli.h src/hub/publish.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/util/err.h
src/cli/cli.h:
src/hub/publish.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
