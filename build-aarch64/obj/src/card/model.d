build-aarch64/obj/src/card/model.o: src/card/model.c src/card/card.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/util/buf.h src/util/err.h src/compare/compare.h
src/card/card.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/buf.h:
src/util/err.h:
src/compare/compare.h:
