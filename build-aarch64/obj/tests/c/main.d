build-aarch64/obj/tests/c/main.o: tests/c/main.c tests/c/check.h
tests/c/check.h:
