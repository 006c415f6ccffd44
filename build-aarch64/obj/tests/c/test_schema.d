build-aarch64/obj/tests/c/test_schema.o: tests/c/test_schema.c \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/format/schema.h src/format/json.h
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/schema.h:
src/format/json.h:
