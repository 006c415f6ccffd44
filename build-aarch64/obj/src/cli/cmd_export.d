build-aarch64/obj/src/cli/cmd_export.o: src/cli/cmd_export.c \
 src/cli/cli.h src/adapt/adapt.h src/util/err.h
src/cli/cli.h:
src/adapt/adapt.h:
src/util/err.h:
