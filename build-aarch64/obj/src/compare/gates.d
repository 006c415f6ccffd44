build-aarch64/obj/src/compare/gates.o: src/compare/gates.c \
 src/compare/gates.h src/compare/side.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/format/sha.h
src/compare/gates.h:
src/compare/side.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/sha.h:
