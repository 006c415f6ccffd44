build-aarch64/obj/src/cli/hub_args.o: src/cli/hub_args.c \
 src/cli/hub_args.h src/hub/hub.h src/util/buf.h src/util/err.h \
 src/cli/cli.h
src/cli/hub_args.h:
src/hub/hub.h:
src/util/buf.h:
src/util/err.h:
src/cli/cli.h:
