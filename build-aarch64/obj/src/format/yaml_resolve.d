build-aarch64/obj/src/format/yaml_resolve.o: src/format/yaml_resolve.c \
 src/format/yaml_resolve.h
src/format/yaml_resolve.h:
