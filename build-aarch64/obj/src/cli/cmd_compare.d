build-aarch64/obj/src/cli/cmd_compare.o: src/cli/cmd_compare.c \
 src/cli/cli.h src/compare/compare.h src/format/json.h \
 src/format/../util/buf.h src/format/../util/err.h src/kernels/gemm.h \
 src/mpi/dist.h src/util/err.h src/report/report.h src/util/buf.h \
 src/util/fsio.h src/util/buf.h src/util/err.h src/cli/hub_args.h \
 src/hub/hub.h src/compare/submission.h
src/cli/cli.h:
src/compare/compare.h:
src/format/json.h:
src/format/../util/buf.h:
src/format/../util/err.h:
src/kernels/gemm.h:
src/mpi/dist.h:
src/util/err.h:
src/report/report.h:
src/util/buf.h:
src/util/fsio.h:
src/util/buf.h:
src/util/err.h:
src/cli/hub_args.h:
src/hub/hub.h:
src/compare/submission.h:
