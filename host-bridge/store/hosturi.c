/*
 * host-bridge/store/hosturi.c: the URI of a host on another machine taken
 * apart (hosturi.h says into what).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-bridge/store/hosturi.h"
#include "host-bridge/util/util.h"

void
remote_clear(struct remote *r)
{
	free(r->machine);
	free(r->user);
	free(r->port);
	free(r->keyfile);
	free(r->known_hosts);
	free(r->ruri);
	memset(r, 0, sizeof *r);
}

/* s[0..n) with %XX decoded (libvirt decodes its URIs' parameters). */
static char *
uri_decode(const char *s, size_t n)
{
	char *o = malloc(n + 1), *w = o;

	if (o == NULL)
		return (NULL);
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (s[i] == '%' && i + 2 < n &&
		    sscanf(s + i + 1, "%2x", &v) == 1) {
			*w++ = (char)v;
			i += 2;
		} else
			*w++ = s[i];
	}
	*w = '\0';
	return (o);
}

/*
 * Is s one word of a line of ssh's configuration, as it is? ssh reads
 * -oUserKnownHostsFile=F so: blanks separate several files (one of them
 * relative, in whatever directory bureau runs from), quotes and
 * backslashes are taken away, a '#' first makes the rest a comment (the
 * option not given: the default files checked instead), trailing
 * control characters are dropped.
 */
static int
ssh_one_word(const char *s)
{
	if (s[0] == '#')
		return (0);
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || *s == ' ' ||
		    *s == '"' || *s == '\'' || *s == '\\')
			return (0);
	return (1);
}

/* uri (qemu+ssh://[USER@]MACHINE[:PORT]/PATH[?k=v&...]) into *r. */
int
remote_parse(const char *uri, struct remote *r, char **cause)
{
	const char *a, *p, *q, *at, *colon, *e;

	memset(r, 0, sizeof *r);
	if (strncmp(uri, "qemu+ssh://", 11) != 0) {
		*cause = hb_fmt(
		    "'%s' is on another machine but not qemu+ssh://: "
		    "bureau reaches the bureau there over SSH "
		    "(qemu+ssh://USER@MACHINE/system)",
		    uri);
		return (-1);
	}
	a = uri + 11;
	p = a + strcspn(a, "/?");
	if (*p != '/' || p == a) {
		*cause = hb_fmt("invalid URI '%s': qemu+ssh://[USER@]MACHINE"
		                "[:PORT]/system expected",
		    uri);
		return (-1);
	}
	q = p + strcspn(p, "?");
	at = memchr(a, '@', (size_t)(p - a));
	if (at != NULL && (r->user = uri_decode(a, (size_t)(at - a))) == NULL)
		goto oom;
	a = at ? at + 1 : a;
	if (*a == '[') { /* [IPv6]:port */
		e = memchr(a, ']', (size_t)(p - a));
		if (e == NULL)
			goto bad;
		r->machine = uri_decode(a + 1, (size_t)(e - a - 1));
		colon = e + 1 < p && e[1] == ':' ? e + 1 : NULL;
	} else {
		colon = memchr(a, ':', (size_t)(p - a));
		r->machine = uri_decode(a, (size_t)((colon ? colon : p) - a));
	}
	if (r->machine == NULL)
		goto oom;
	if (r->machine[0] == '\0' || r->machine[0] == '-')
		goto bad;
	if (colon != NULL) {
		size_t n = (size_t)(p - colon - 1);

		if (n == 0 || n > 5 || strspn(colon + 1, "0123456789") < n)
			goto bad;
		if ((r->port = uri_decode(colon + 1, n)) == NULL)
			goto oom;
	}
	if ((r->ruri = hb_fmt("qemu://%.*s", (int)(q - p), p)) == NULL)
		goto oom;
	/* the parameters of libvirt's SSH transport that SSH itself needs */
	while (*q == '?' || *q == '&') {
		const char *k = q + 1, *v, *end = k + strcspn(k, "&");
		char **dst = NULL;

		v = memchr(k, '=', (size_t)(end - k));
		if (v != NULL && strncmp(k, "keyfile=", 8) == 0)
			dst = &r->keyfile;
		else if (v != NULL && strncmp(k, "known_hosts=", 12) == 0)
			dst = &r->known_hosts;
		else if (v != NULL && strncmp(k, "no_verify=", 10) == 0)
			r->no_verify = v[1] == '1';
		if (dst != NULL)
			free(*dst); /* given twice: the last */
		if (dst != NULL &&
		    (*dst = uri_decode(v + 1, (size_t)(end - v - 1))) == NULL)
			goto oom;
		/* the machine's key checked against that file, no other */
		if (dst == &r->known_hosts && !ssh_one_word(*dst)) {
			*cause = hb_fmt(
			    "invalid URI '%s': known_hosts must name "
			    "one file, without blanks, quotes, "
			    "backslashes or control characters, not "
			    "starting with '#' (ssh would read it as "
			    "several files, or none)",
			    uri);
			remote_clear(r);
			return (-1);
		}
		q = end;
	}
	return (0);
bad:
	*cause = hb_fmt("invalid URI '%s': qemu+ssh://[USER@]MACHINE[:PORT]"
	                "/system expected",
	    uri);
	remote_clear(r);
	return (-1);
oom:
	*cause = hb_fmt("out of memory");
	remote_clear(r);
	return (-1);
}
