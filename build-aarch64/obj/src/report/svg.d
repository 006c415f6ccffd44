build-aarch64/obj/src/report/svg.o: src/report/svg.c src/report/svg.h \
 src/util/buf.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/pyfloat.h
src/report/svg.h:
src/util/buf.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/pyfloat.h:
