build-aarch64/obj/src/cli/main.o: src/cli/main.c src/cli/cli.h
src/cli/cli.h:
