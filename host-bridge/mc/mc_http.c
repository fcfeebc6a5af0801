/*
 * host-bridge/mc/mc_http.c: Mission Control's HTTP replies: JSON bodies,
 * errors with the protocol's codes, request bodies, static files.
 */
#include <civetweb.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host-bridge/mc/mc.h"
#include "host-bridge/util/util.h"

#define MC_BODY_MAX (1 << 16)

/* ---- replies ---------------------------------------------------------- */

int
mc_send(struct mg_connection *c, int status, const char *type, const void *body,
    size_t len, const char *extra)
{
	mg_printf(c,
	    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	    "Cache-Control: no-store\r\n" MC_HEADERS
	    "\r\n%sConnection: close\r\n\r\n",
	    status, mg_get_response_code_text(c, status), type, len,
	    extra ? extra : "");
	if (len > 0)
		mg_write(c, body, len);
	return (status);
}

/* j (stolen) as the reply's JSON body. */
int
mc_json(struct mg_connection *c, int status, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	int rv;

	json_decref(j);
	if (s == NULL)
		return (mc_send(c, 500, "application/json",
		    "{\"ok\":false,\"error\":{\"code\":\"internal\"}}", 41,
		    NULL));
	rv = mc_send(c, status, "application/json", s, strlen(s), NULL);
	free(s);
	return (rv);
}

int
mc_err(struct mg_connection *c, int status, const char *code, const char *fmt,
    ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	status = mc_json(c, status,
	    json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code", code,
	        "message", msg ? msg : code));
	free(msg);
	return (status);
}

/* The HTTP status of an operator-socket error code. */
int
mc_status_of(const char *code)
{
	if (strcmp(code, bureau_error_name(BUREAU_ENOTFOUND)) == 0)
		return (404);
	if (strcmp(code, bureau_error_name(BUREAU_EINVAL)) == 0 ||
	    strcmp(code, bureau_error_name(BUREAU_EBADREQ)) == 0)
		return (400);
	if (strcmp(code, "unavailable") == 0 ||
	    strcmp(code, "not_applicable") == 0)
		return (409);
	if (strcmp(code, bureau_error_name(BUREAU_EPERM)) == 0)
		return (403);
	return (502);
}

/* The request body as a JSON object (empty body: {}), or NULL after
 * replying 400. */
json_t *
mc_body(struct mg_connection *c, int *status)
{
	char *buf = malloc(MC_BODY_MAX + 1);
	size_t n = 0;
	int r;
	json_t *j;
	json_error_t e;

	if (buf == NULL) {
		*status = mc_err(c, 500, bureau_error_name(BUREAU_EINTERNAL),
		    "out of memory");
		return (NULL);
	}
	while (
	    n < MC_BODY_MAX && (r = mg_read(c, buf + n, MC_BODY_MAX - n)) > 0)
		n += (size_t)r;
	if (n >= MC_BODY_MAX) {
		free(buf);
		*status = mc_err(c, 413, bureau_error_name(BUREAU_ETOOLARGE),
		    "request body larger than %d bytes", MC_BODY_MAX);
		return (NULL);
	}
	buf[n] = '\0';
	j = n == 0 ? json_object() :
	             json_loadb(buf, n, JSON_REJECT_DUPLICATES, &e);
	free(buf);
	if (!json_is_object(j)) {
		json_decref(j);
		*status = mc_err(c, 400, bureau_error_name(BUREAU_EBADREQ),
		    "the request body must be a JSON object");
		return (NULL);
	}
	return (j);
}

/* ---- static files ------------------------------------------------------ */

/* Serve dir/rel: rel is checked to be a plain relative path first. */
int
mc_file(struct mg_connection *c, const char *dir, const char *rel)
{
	char *path;
	struct stat st;

	if (*rel == '\0' || strstr(rel, "..") != NULL || rel[0] == '/' ||
	    rel[strspn(rel,
	        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
	        "VWXYZ0123456789._-/")] != '\0')
		return (mc_err(c, 404, bureau_error_name(BUREAU_ENOTFOUND),
		    "no such file"));
	path = hb_fmt("%s/%s", dir, rel);
	if (path == NULL || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		free(path);
		return (mc_err(c, 404, bureau_error_name(BUREAU_ENOTFOUND),
		    "no such file"));
	}
	mg_send_file(c, path);
	free(path);
	return (200);
}
