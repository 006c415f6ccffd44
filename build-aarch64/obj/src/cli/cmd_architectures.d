build-aarch64/obj/src/cli/cmd_architectures.o: \
 src/cli/cmd_architectures.c src/cli/cli.h src/capture/panel.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/format/writer.h src/format/json.h src/util/err.h \
 src/capture/schedule.h src/capture/probe.h src/engine/config.h \
 src/engine/matmul.h src/kernels/gemm.h src/util/pool.h \
 src/engine/weights.h src/engine/qconfig.h src/util/strv.h \
 src/format/safetensors.h src/format/sha.h src/engine/archtable.h \
 src/format/sha.h src/format/version.h src/util/fsio.h src/util/buf.h \
 src/util/err.h
src/cli/cli.h:
src/capture/panel.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/writer.h:
src/format/json.h:
src/util/err.h:
src/capture/schedule.h:
src/capture/probe.h:
src/engine/config.h:
src/engine/matmul.h:
src/kernels/gemm.h:
src/util/pool.h:
src/engine/weights.h:
src/engine/qconfig.h:
src/util/strv.h:
src/format/safetensors.h:
src/format/sha.h:
src/engine/archtable.h:
src/format/sha.h:
src/format/version.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
