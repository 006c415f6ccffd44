build-aarch64/obj/src/format/gguf.o: src/format/gguf.c src/format/gguf.h \
 src/util/err.h src/format/ggml_quants.h src/util/buf.h
src/format/gguf.h:
src/util/err.h:
src/format/ggml_quants.h:
src/util/buf.h:
