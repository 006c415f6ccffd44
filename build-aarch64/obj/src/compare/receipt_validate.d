build-aarch64/obj/src/compare/receipt_validate.o: \
 src/compare/receipt_validate.c src/compare/compare.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/format/schema.h \
 src/format/json.h src/util/buf.h
src/compare/compare.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/schema.h:
src/format/json.h:
src/util/buf.h:
