build-aarch64/obj/src/compare/submission.o: src/compare/submission.c \
 src/compare/submission.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/util/err.h src/format/digest.h \
 src/format/json.h src/format/sha.h
src/compare/submission.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/format/digest.h:
src/format/json.h:
src/format/sha.h:
