build-aarch64/obj/src/format/ggml_quants.o: src/format/ggml_quants.c \
 src/format/ggml_quants.h src/util/err.h src/util/bf16.h \
 src/format/ggml_tables.inc
src/format/ggml_quants.h:
src/util/err.h:
src/util/bf16.h:
src/format/ggml_tables.inc:
