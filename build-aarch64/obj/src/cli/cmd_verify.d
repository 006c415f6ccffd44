build-aarch64/obj/src/cli/cmd_verify.o: src/cli/cmd_verify.c \
 src/cli/cli.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/validate.h src/format/json.h \
 src/compare/compare.h src/cli/hub_args.h src/hub/hub.h src/util/buf.h \
 src/util/err.h src/util/fsio.h src/util/buf.h src/util/err.h
src/cli/cli.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/validate.h:
src/format/json.h:
src/compare/compare.h:
src/cli/hub_args.h:
src/hub/hub.h:
src/util/buf.h:
src/util/err.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
