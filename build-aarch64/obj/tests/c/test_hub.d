build-aarch64/obj/tests/c/test_hub.o: tests/c/test_hub.c tests/c/check.h \
 src/hub/hub.h src/util/buf.h src/util/err.h src/compare/submission.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/card/card.h src/format/writer.h src/format/json.h
tests/c/check.h:
src/hub/hub.h:
src/util/buf.h:
src/util/err.h:
src/compare/submission.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/card/card.h:
src/format/writer.h:
src/format/json.h:
