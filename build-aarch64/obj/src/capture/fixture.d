build-aarch64/obj/src/capture/fixture.o: src/capture/fixture.c \
 src/capture/fixture.h src/util/err.h src/capture/fixture_next.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/capture/model_dir.h src/format/safetensors.h src/format/json.h \
 src/format/sha.h src/util/strv.h src/capture/panel.h src/format/writer.h \
 src/engine/config.h src/engine/weights.h src/engine/qconfig.h \
 src/util/bf16.h src/util/buf.h src/util/fsio.h src/util/buf.h \
 src/util/err.h src/util/rng.h
src/capture/fixture.h:
src/util/err.h:
src/capture/fixture_next.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/capture/model_dir.h:
src/format/safetensors.h:
src/format/json.h:
src/format/sha.h:
src/util/strv.h:
src/capture/panel.h:
src/format/writer.h:
src/engine/config.h:
src/engine/weights.h:
src/engine/qconfig.h:
src/util/bf16.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
src/util/rng.h:
