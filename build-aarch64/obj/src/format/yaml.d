build-aarch64/obj/src/format/yaml.o: src/format/yaml.c \
 src/format/writer.h src/format/json.h src/format/../util/buf.h \
 src/format/../util/err.h src/format/yaml_resolve.h
src/format/writer.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/format/yaml_resolve.h:
