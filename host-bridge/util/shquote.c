/*
 * host-bridge/util/shquote.c: words quoted for a POSIX shell (shquote.h
 * says how).
 */
#include <stdlib.h>
#include <string.h>

#include "host-bridge/util/shquote.h"

/* piece appended to the growing string *buf. */
static int
sh_append(char **buf, size_t *len, size_t *cap, const char *piece)
{
	size_t pl = strlen(piece);

	if (*len + pl + 1 > *cap) {
		size_t nc = (*len + pl + 1) * 2;
		char *nb = realloc(*buf, nc);

		if (nb == NULL)
			return (-1);
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf + *len, piece, pl + 1);
	*len += pl;
	return (0);
}

/* " 's'" appended: s quoted for the remote shell (a ' as '\''). */
static int
sh_quote(char **buf, size_t *len, size_t *cap, const char *s)
{
	char one[2] = { 0, 0 };

	if (sh_append(buf, len, cap, " '") != 0)
		return (-1);
	for (; *s != '\0'; s++) {
		one[0] = *s;
		if (sh_append(buf, len, cap, *s == '\'' ? "'\\''" : one) != 0)
			return (-1);
	}
	return (sh_append(buf, len, cap, "'"));
}

/* The remote shell's command line: words quoted, the first (a program)
 * as it is. */
char *
sh_line(const char *prog, char *const *words, int n)
{
	size_t len = strlen(prog), cap = len + 64;
	char *b = malloc(cap);

	if (b == NULL)
		return (NULL);
	memcpy(b, prog, len + 1);
	for (int i = 0; i < n; i++)
		if (sh_quote(&b, &len, &cap, words[i]) != 0) {
			free(b);
			return (NULL);
		}
	return (b);
}
