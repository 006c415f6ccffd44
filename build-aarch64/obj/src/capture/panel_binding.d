build-aarch64/obj/src/capture/panel_binding.o: \
 src/capture/panel_binding.c src/capture/panel_binding.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/util/err.h src/format/npy.h src/format/sha.h \
 src/format/validate_util.h src/format/json.h src/format/validate.h \
 src/util/fsio.h src/util/buf.h src/util/err.h src/util/strv.h
src/capture/panel_binding.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/format/npy.h:
src/format/sha.h:
src/format/validate_util.h:
src/format/json.h:
src/format/validate.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
src/util/strv.h:
