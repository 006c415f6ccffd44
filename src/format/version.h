#ifndef FD_VERSION_H
#define FD_VERSION_H
#define FD_VERSION "0.1.0"
#define FD_ENGINE_NAME "fidelity-c"
#endif
