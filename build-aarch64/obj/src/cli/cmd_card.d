build-aarch64/obj/src/cli/cmd_card.o: src/cli/cmd_card.c src/cli/cli.h \
 src/card/card.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/util/buf.h src/util/err.h src/util/fsio.h \
 src/util/buf.h src/util/err.h
src/cli/cli.h:
src/card/card.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/buf.h:
src/util/err.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
