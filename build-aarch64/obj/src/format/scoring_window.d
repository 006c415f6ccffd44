build-aarch64/obj/src/format/scoring_window.o: \
 src/format/scoring_window.c src/format/scoring_window.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h
src/format/scoring_window.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
