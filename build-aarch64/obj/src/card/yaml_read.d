build-aarch64/obj/src/card/yaml_read.o: src/card/yaml_read.c \
 src/card/card.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/util/buf.h src/util/err.h \
 src/format/yaml_resolve.h
src/card/card.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/buf.h:
src/util/err.h:
src/format/yaml_resolve.h:
