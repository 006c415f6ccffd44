build-aarch64/obj/src/card/render.o: src/card/render.c src/card/card.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/util/buf.h src/util/err.h src/format/writer.h src/format/json.h
src/card/card.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/buf.h:
src/util/err.h:
src/format/writer.h:
src/format/json.h:
