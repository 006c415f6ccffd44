build-aarch64/obj/tests/c/test_qformat.o: tests/c/test_qformat.c \
 tests/c/check.h src/capture/qscope.h src/engine/config.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/util/err.h src/engine/weights.h src/engine/qconfig.h src/util/strv.h \
 src/format/safetensors.h src/format/json.h src/format/sha.h \
 src/engine/qformat.h
tests/c/check.h:
src/capture/qscope.h:
src/engine/config.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/engine/weights.h:
src/engine/qconfig.h:
src/util/strv.h:
src/format/safetensors.h:
src/format/json.h:
src/format/sha.h:
src/engine/qformat.h:
