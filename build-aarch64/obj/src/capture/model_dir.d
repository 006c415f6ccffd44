build-aarch64/obj/src/capture/model_dir.o: src/capture/model_dir.c \
 src/capture/model_dir.h src/format/safetensors.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/format/sha.h \
 src/util/strv.h src/util/buf.h src/util/fsio.h src/util/buf.h \
 src/util/err.h
src/capture/model_dir.h:
src/format/safetensors.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/sha.h:
src/util/strv.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
