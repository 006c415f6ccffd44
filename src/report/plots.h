/* The report's figures, each one complete <svg> element with the seals of
 * the receipts it draws from printed under the plot (docs/REPORT.md). */
#ifndef FD_REPORT_PLOTS_H
#define FD_REPORT_PLOTS_H
#include "report.h"

/* Mean KL(reference||candidate) with its bootstrap 95% CI and the reverse
 * mean KL(candidate||reference), one row per candidate, log x. */
void fd_plot_means(fd_buf *b, const fd_rpt *r);
/* Empirical CDF of the tokenwise KL of every candidate, log x. */
void fd_plot_cdf(fd_buf *b, const fd_rpt *r);
/* Mean KL by depth (row index within a context), binned, log y. */
void fd_plot_depth(fd_buf *b, const fd_rpt *r);
/* Mean KL (with CI) against declared bits per weight; returns 0 and
 * writes nothing when no candidate declares its bits. */
int fd_plot_scatter(fd_buf *b, const fd_rpt *r);
/* on[i] = 1 when candidate i declares its bits and no other candidate is
 * both no larger and no worse (mean KL) and better in one of the two. */
void fd_rpt_pareto(const fd_rpt *r, unsigned char *on);
/* Mean KL per panel domain (the receipts' per_domain), one bar per
 * candidate, log x; returns 0 and writes nothing when no receipt has one. */
int fd_plot_domains(fd_buf *b, const fd_rpt *r);
/* Log-x histogram of one candidate's tokenwise KL (fraction of positions),
 * with the receipt's median/p99/max marked; nothing without tokenwise. */
void fd_plot_hist(fd_buf *b, const fd_rpt *r, size_t i);
/* Per-context mean KL bars in receipt order, the worst contexts labelled. */
void fd_plot_contexts(fd_buf *b, const fd_rpt *r, size_t i);

#endif
