#include "pyfloat.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parse "%.*e" output "d.ddde[+-]xx" into bare digits and the exponent. */
static void split_e(const char *s, char *digits, int *exp10)
{
    int n = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9') digits[n++] = *s;
    digits[n] = 0;
    *exp10 = atoi(s + 1);
}

static double digits_value(const char *digits, int exp10)
{
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%c.%se%d", digits[0], digits + 1, exp10);
    return strtod(tmp, NULL);
}

/* Adds +1 or -1 in the last place of a digit string (same length kept
 * unless a carry adds a digit, which then bumps the exponent). */
static void step_digits(char *digits, int *exp10, int dir)
{
    int n = (int)strlen(digits), i = n - 1;
    if (dir > 0) {
        while (i >= 0 && digits[i] == '9') digits[i--] = '0';
        if (i >= 0) { digits[i]++; return; }
        memmove(digits + 1, digits, (size_t)n + 1);
        digits[0] = '1';
        digits[n] = 0;            /* keep n digits: 99 -> 10 with exp+1 */
        (*exp10)++;
    } else {
        while (i >= 0 && digits[i] == '0') digits[i--] = '9';
        if (i >= 0) digits[i]--;
        if (digits[0] == '0' && n > 1) { /* 10 -> 09 -> 9x with exp-1 */
            memmove(digits, digits + 1, (size_t)n);
            digits[n - 1] = '9';
            (*exp10)--;
        }
    }
}

/* Shortest round-trip digits of |d| > 0: for each precision try the nearest
 * decimal, then its neighbour on the other side of d (the round-trip
 * interval is asymmetric at powers of two, where the nearest can fail while
 * the neighbour succeeds; David Gay's mode 0, which CPython uses, picks it). */
static int try_precision(double d, int p, char *digits, int *exp10)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.*e", p - 1, d);
    split_e(buf, digits, exp10);
    double v = digits_value(digits, *exp10);
    if (v == d) return 1;
    char alt[32];
    int aexp = *exp10;
    memcpy(alt, digits, strlen(digits) + 1);
    step_digits(alt, &aexp, v > d ? -1 : +1);
    if (alt[0] != '0' && digits_value(alt, aexp) == d) {
        memcpy(digits, alt, strlen(alt) + 1);
        *exp10 = aexp;
        return 1;
    }
    return 0;
}

/* "some p-digit decimal round-trips" is monotone in p (the p+1-digit nearest,
 * or its neighbour on the wide side of an asymmetric interval, is at least
 * as close as any p-digit one), so the smallest p is found by bisection:
 * about 4 tries instead of up to 17 (a 100,000-row receipt's seal). */
static void shortest(double d, char *digits, int *exp10)
{
    int lo = 1, hi = 17;   /* invariant: precision hi round-trips (17 always does) */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (try_precision(d, mid, digits, exp10)) hi = mid;
        else lo = mid + 1;
    }
    if (!try_precision(d, hi, digits, exp10)) {
        char buf[64];
        snprintf(buf, sizeof buf, "%.16e", d);
        split_e(buf, digits, exp10);
    }
}

int fd_pyfloat_repr(double d, char *out, size_t cap)
{
    if (!isfinite(d)) return -1;
    char digits[32];
    int e10, n = 0;
    char tmp[64];
    const char *sign = signbit(d) ? "-" : "";
    if (d == 0) return snprintf(out, cap, "%s0.0", sign);
    shortest(fabs(d), digits, &e10);
    int nd = (int)strlen(digits);
    while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = 0;
    int decpt = e10 + 1; /* value = 0.DIGITS x 10^decpt */
    if (decpt <= -4 || decpt > 16) {
        n = snprintf(tmp, sizeof tmp, "%s%c%s%s%se%c%02d", sign, digits[0], nd > 1 ? "." : "",
                     digits + 1, "", e10 < 0 ? '-' : '+', abs(e10));
    } else if (decpt <= 0) {
        n = snprintf(tmp, sizeof tmp, "%s0.%0*d%s", sign, -decpt, 0, digits);
        if (decpt == 0) n = snprintf(tmp, sizeof tmp, "%s0.%s", sign, digits);
    } else if (decpt >= nd) {
        n = snprintf(tmp, sizeof tmp, "%s%s%0*d.0", sign, digits, decpt - nd, 0);
        if (decpt == nd) n = snprintf(tmp, sizeof tmp, "%s%s.0", sign, digits);
    } else {
        n = snprintf(tmp, sizeof tmp, "%s%.*s.%s", sign, decpt, digits, digits + decpt);
    }
    if (n < 0 || (size_t)n >= cap) return -1;
    memcpy(out, tmp, (size_t)n + 1);
    return n;
}
