build-aarch64/obj/src/adapt/adapt_kld.o: src/adapt/adapt_kld.c \
 src/adapt/adapt.h src/util/err.h src/format/scoring_window.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/adapt/kld.h src/compare/side.h src/format/json.h \
 src/format/safetensors.h src/format/sha.h src/format/sha.h \
 src/format/writer.h
src/adapt/adapt.h:
src/util/err.h:
src/format/scoring_window.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/adapt/kld.h:
src/compare/side.h:
src/format/json.h:
src/format/safetensors.h:
src/format/sha.h:
src/format/sha.h:
src/format/writer.h:
