/*
 * host-bridge/agent/agent_reply.c: the protocol's replies, as the endpoint and
 * the operator socket send them (see agent_int.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-bridge/agent/agent_int.h"

char *
ag_dump(json_t *j)
{
	char *s = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	/* Spelled out: without memory, no reply can be built. */
	if (s == NULL)
		s = strdup("{\"ok\":false,\"error\":{\"code\":\"internal\","
		           "\"message\":\"out of memory\"}}");
	return (s);
}

/* ag_error with its arguments in ap. */
static char *
ag_errorv(json_t *id, int code, const char *fmt, va_list ap)
{
	const char *name = bureau_error_name(code);
	char *msg;
	json_t *r;

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	r = json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code", name,
	    "message", msg != NULL ? msg : name);
	free(msg);
	if (r != NULL && id != NULL)
		json_object_set(r, "id", id);
	return (ag_dump(r));
}

char *
ag_error(json_t *id, int code, const char *fmt, ...)
{
	va_list ap;
	char *r;

	va_start(ap, fmt);
	r = ag_errorv(id, code, fmt, ap);
	va_end(ap);
	return (r);
}

char *
ag_refuse(const char **err, json_t *id, int code, const char *fmt, ...)
{
	va_list ap;
	char *r;

	*err = bureau_error_name(code);
	va_start(ap, fmt);
	r = ag_errorv(id, code, fmt, ap);
	va_end(ap);
	return (r);
}

nng_msg *
ag_msg(char *text)
{
	nng_msg *m = NULL;

	if (text != NULL &&
	    (nng_msg_alloc(&m, 0) != 0 ||
	        nng_msg_append(m, text, strlen(text)) != 0)) {
		nng_msg_free(m);
		m = NULL;
	}
	free(text);
	return (m);
}
