/*
 * common/size.c: sizes with a unit (see size.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "common/size.h"

/* The multiplier of the unit at *end (moved past it), 1 for none, 0 for a
 * letter that is no unit. */
static unsigned long long
size_unit(const char **end, int flags)
{
	int shift;

	switch (**end) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 't':
	case 'T':
		if (!(flags & SIZE_UNIT_T))
			return (0);
		shift = 40;
		break;
	default:
		return (**end == '\0' ? 1 : 0);
	}
	(*end)++;
	if (flags & SIZE_UNIT_BYTES) {
		if ((*end)[0] == 'i' && (*end)[1] == 'B')
			*end += 2;
		else if ((*end)[0] == 'B')
			(*end)++;
	}
	return (1ULL << shift);
}

enum size_status
size_parse(const char *s, int flags, unsigned long long max,
    unsigned long long *out)
{
	unsigned long long n, mul;
	const char *end;
	char *e;

	if (*s == '\0')
		return (SIZE_EMPTY);
	if (*s == '-')
		return (SIZE_NEGATIVE);
	if (*s < '0' || *s > '9')
		return (SIZE_NOT_NUMBER);
	errno = 0;
	n = strtoull(s, &e, 10);
	if (errno == ERANGE)
		return (SIZE_TOO_LARGE);
	end = e;
	if ((mul = size_unit(&end, flags)) == 0 || *end != '\0')
		return (SIZE_TRAILING);
	if (__builtin_mul_overflow(n, mul, &n) || n > max)
		return (SIZE_TOO_LARGE);
	*out = n;
	return (SIZE_OK);
}
