#include "util/progress.h"

void fd_progress_eta(uint64_t done, uint64_t total, double rate, char *out, size_t cap)
{
    if (!(rate > 0) || !total || done > total) { snprintf(out, cap, "--"); return; }
    double left = (double)(total - done) / rate + 0.5;
    long s = left < 3.6e8 ? (long)left : 359999999L;
    snprintf(out, cap, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
}

void fd_progress_line(FILE *f, const char *what, uint64_t done, uint64_t total, const char *unit, uint64_t base,
                      double elapsed_s, int inplace)
{
    double rate = elapsed_s > 0 && done > base ? (double)(done - base) / elapsed_s : 0.0;
    char eta[32];
    fd_progress_eta(done, total, rate, eta, sizeof eta);
    if (total)
        fprintf(f, "%s%s: %llu/%llu %s %5.1f%% (%.*f %s/s, ETA %s)%s", inplace ? "\r" : "", what,
                (unsigned long long)done, (unsigned long long)total, unit,
                done >= total ? 100.0 : 100.0 * (double)done / (double)total, rate < 10 ? 2 : 0, rate, unit, eta,
                inplace ? "   " : "\n");
    else
        fprintf(f, "%s%s: %llu %s (%.*f %s/s)%s", inplace ? "\r" : "", what, (unsigned long long)done, unit,
                rate < 10 ? 2 : 0, rate, unit, inplace ? "   " : "\n");
    fflush(f);
}
