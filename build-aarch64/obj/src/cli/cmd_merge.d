build-aarch64/obj/src/cli/cmd_merge.o: src/cli/cmd_merge.c src/cli/cli.h \
 src/capture/merge.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h
src/cli/cli.h:
src/capture/merge.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
