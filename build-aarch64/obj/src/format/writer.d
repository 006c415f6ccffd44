build-aarch64/obj/src/format/writer.o: src/format/writer.c \
 src/format/writer.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/digest.h src/format/npy.h \
 src/format/safetensors.h src/format/sha.h src/format/validate.h \
 src/format/version.h src/format/checksums.h src/format/../util/strv.h \
 src/format/k3compat.h src/format/../util/fsio.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/../util/utc.h \
 src/format/writer_blocks.inc
src/format/writer.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/digest.h:
src/format/npy.h:
src/format/safetensors.h:
src/format/sha.h:
src/format/validate.h:
src/format/version.h:
src/format/checksums.h:
src/format/../util/strv.h:
src/format/k3compat.h:
src/format/../util/fsio.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/../util/utc.h:
src/format/writer_blocks.inc:
