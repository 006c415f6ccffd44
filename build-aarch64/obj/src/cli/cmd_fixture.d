build-aarch64/obj/src/cli/cmd_fixture.o: src/cli/cmd_fixture.c \
 src/cli/cli.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/validate.h src/format/json.h \
 src/format/writer.h src/capture/fixture.h src/util/err.h \
 src/format/digest.h src/util/bf16.h src/util/rng.h src/util/fsio.h \
 src/util/buf.h src/util/err.h
src/cli/cli.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/validate.h:
src/format/json.h:
src/format/writer.h:
src/capture/fixture.h:
src/util/err.h:
src/format/digest.h:
src/util/bf16.h:
src/util/rng.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
