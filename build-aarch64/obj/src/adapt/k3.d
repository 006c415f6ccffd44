build-aarch64/obj/src/adapt/k3.o: src/adapt/k3.c src/adapt/k3.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/format/sha.h
src/adapt/k3.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/sha.h:
