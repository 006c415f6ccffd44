build-aarch64/obj/src/adapt/export_kld.o: src/adapt/export_kld.c \
 src/adapt/adapt.h src/util/err.h src/adapt/kld.h src/compare/side.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/format/sha.h src/kernels/gemm.h src/util/fsio.h src/util/buf.h \
 src/util/err.h
src/adapt/adapt.h:
src/util/err.h:
src/adapt/kld.h:
src/compare/side.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/sha.h:
src/kernels/gemm.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
