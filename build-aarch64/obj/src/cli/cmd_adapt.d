build-aarch64/obj/src/cli/cmd_adapt.o: src/cli/cmd_adapt.c src/cli/cli.h \
 src/adapt/adapt.h src/util/err.h src/format/writer.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h
src/cli/cli.h:
src/adapt/adapt.h:
src/util/err.h:
src/format/writer.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
