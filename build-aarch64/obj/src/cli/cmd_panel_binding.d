build-aarch64/obj/src/cli/cmd_panel_binding.o: \
 src/cli/cmd_panel_binding.c src/cli/cli.h src/capture/panel_binding.h \
 src/format/json.h src/format/../util/buf.h src/format/../util/err.h \
 src/util/err.h src/format/sha.h
src/cli/cli.h:
src/capture/panel_binding.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/util/err.h:
src/format/sha.h:
