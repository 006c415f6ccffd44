build-aarch64/obj/src/cli/cmd_model_fixture.o: \
 src/cli/cmd_model_fixture.c src/capture/fixture.h src/util/err.h \
 src/cli/cli.h
src/capture/fixture.h:
src/util/err.h:
src/cli/cli.h:
