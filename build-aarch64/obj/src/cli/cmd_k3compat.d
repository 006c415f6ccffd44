build-aarch64/obj/src/cli/cmd_k3compat.o: src/cli/cmd_k3compat.c \
 src/cli/cli.h src/format/k3compat.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/format/validate.h
src/cli/cli.h:
src/format/k3compat.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/validate.h:
