/*
 * common/size: sizes as options give them ("512M", "20G", "4096"): the one
 * syntax of bureaud's numeric options and the CLI's disk and memory sizes.
 * The callers word their own errors from the status.
 */
#ifndef BUREAU_COMMON_SIZE_H
#define BUREAU_COMMON_SIZE_H

enum size_status {
	SIZE_OK,
	SIZE_EMPTY,
	SIZE_NEGATIVE,   /* starts with '-' */
	SIZE_NOT_NUMBER, /* does not start with a digit */
	SIZE_TOO_LARGE,  /* over max, or past what 64 bits hold */
	SIZE_TRAILING    /* anything after the number and its unit */
};

/* Units: K, M and G; with SIZE_UNIT_T also T; with SIZE_UNIT_BYTES an
 * optional "B" or "iB" after the unit ("2GiB"). */
#define SIZE_UNIT_T     0x1
#define SIZE_UNIT_BYTES 0x2

/*
 * s as decimal digits then an optional unit (either case, powers of 1024),
 * nothing before or after: strtoull alone would skip white space, take a
 * sign (and negate "-1" into a huge value) and stop at garbage. The
 * multiplication is checked, so "17179869185G" is too large instead of
 * wrapping. *out is set only on SIZE_OK.
 */
enum size_status size_parse(const char *s, int flags, unsigned long long max,
    unsigned long long *out);

#endif
