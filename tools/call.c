/*
 * tools/call.c: what every tool uses to read its fields and write its reply.
 * Every argument error names its field, so a client knows what to fix.
 */
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/utf8.h"
#include "tools/tool.h"
#include "x11/clock.h"

int
tool_failv(struct tool_call *call, int code, const char *fmt, va_list ap)
{
	/* The first error wins: it is the cause, later ones are fallout. */
	if (call->code != 0)
		return (call->code);
	call->code = code;
	if (vasprintf(&call->message, fmt, ap) < 0)
		call->message = NULL;
	return (code);
}

int
tool_fail(struct tool_call *call, int code, const char *fmt, ...)
{
	va_list ap;
	int rv;

	va_start(ap, fmt);
	rv = tool_failv(call, code, fmt, ap);
	va_end(ap);
	return (rv);
}

static const char *
tool_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return ("an object");
	case JSON_ARRAY:
		return ("an array");
	case JSON_STRING:
		return ("a string");
	case JSON_INTEGER:
		return ("an integer");
	case JSON_REAL:
		return ("a number");
	case JSON_TRUE:
	case JSON_FALSE:
		return ("a boolean");
	case JSON_NULL:
		return ("null");
	}
	return ("unknown");
}

/* The field's value, or NULL when missing or null. */
static json_t *
tool_field(struct tool_call *call, const char *field)
{
	json_t *v = json_object_get(call->req, field);

	return (v == NULL || json_is_null(v) ? NULL : v);
}

int
tool_arg_has(struct tool_call *call, const char *field)
{
	return (tool_field(call, field) != NULL);
}

static int
tool_missing(struct tool_call *call, const char *field)
{
	const char *a = call->action;

	if (a != NULL)
		return (tool_fail(call, BD_EINVAL,
		    "missing field '%s' (required by '%s')", field, a));
	return (tool_fail(call, BD_EINVAL, "missing field '%s'", field));
}

static int
tool_wrong_type(struct tool_call *call, const char *field, const char *want,
    const json_t *v)
{
	return (tool_fail(call, BD_EBADREQ, "field '%s' must be %s, not %s",
	    field, want, tool_type_name(v)));
}

int
tool_arg_str(struct tool_call *call, const char *field, int required,
    const char *def, const char **out)
{
	json_t *v = tool_field(call, field);

	if (v == NULL) {
		if (required)
			return (tool_missing(call, field));
		*out = def;
		return (0);
	}
	if (!json_is_string(v))
		return (tool_wrong_type(call, field, "a string", v));
	*out = json_string_value(v);
	return (0);
}

int
tool_arg_argv(struct tool_call *call, size_t max_args, size_t max_command,
    char ***out)
{
	json_t *jargv = tool_field(call, "argv");
	const char *command;
	char **argv;
	size_t clen, n;

	*out = NULL;
	if (tool_arg_strn(call, "command", 0, max_command, &command, &clen) !=
	    0)
		return (call->code);
	if (command != NULL && jargv != NULL)
		return (tool_fail(call, BD_EINVAL,
		    "give either 'command' or 'argv', not both"));
	if (command == NULL && jargv == NULL)
		return (tool_fail(call, BD_EINVAL,
		    "missing field 'command' or 'argv' (required by '%s')",
		    call->action != NULL ? call->action : "this action"));
	if (command != NULL) {
		if (clen == 0 || strlen(command) != clen)
			return (tool_fail(call, BD_EINVAL,
			    "invalid command: %s",
			    clen == 0 ? "empty" : "it contains a NUL byte"));
		if ((argv = calloc(4, sizeof *argv)) == NULL)
			return (tool_fail(call, BD_EINTERNAL, "out of memory"));
		argv[0] = "/bin/sh";
		argv[1] = "-c";
		argv[2] = (char *)command;
		*out = argv;
		return (0);
	}
	if (!json_is_array(jargv) || (n = json_array_size(jargv)) == 0)
		return (tool_fail(call, BD_EBADREQ,
		    "field 'argv' must be a non-empty array of strings"));
	if (n > max_args)
		return (tool_fail(call, BD_ETOOLARGE,
		    "field 'argv' has %zu elements, more than the limit of %zu",
		    n, max_args));
	if ((argv = calloc(n + 1, sizeof *argv)) == NULL)
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	for (size_t i = 0; i < n; i++) {
		json_t *a = json_array_get(jargv, i);

		if (!json_is_string(a)) {
			free(argv);
			return (tool_fail(call, BD_EBADREQ,
			    "field 'argv[%zu]' must be a string", i));
		}
		if (strlen(json_string_value(a)) != json_string_length(a) ||
		    (i == 0 && json_string_length(a) == 0)) {
			free(argv);
			return (tool_fail(call, BD_EINVAL,
			    "invalid 'argv[%zu]': %s", i,
			    i == 0 && json_string_length(a) == 0 ?
			        "empty" :
			        "it contains a NUL byte"));
		}
		argv[i] = (char *)json_string_value(a);
	}
	*out = argv;
	return (0);
}

int
tool_arg_strn(struct tool_call *call, const char *field, int required,
    size_t maxlen, const char **out, size_t *len)
{
	json_t *v = tool_field(call, field);

	if (v == NULL) {
		if (required)
			return (tool_missing(call, field));
		*out = NULL;
		*len = 0;
		return (0);
	}
	if (!json_is_string(v))
		return (tool_wrong_type(call, field, "a string", v));
	if (json_string_length(v) > maxlen)
		return (tool_fail(call, BD_ETOOLARGE,
		    "field '%s' is %zu bytes, more than the limit of %zu",
		    field, json_string_length(v), maxlen));
	*out = json_string_value(v);
	*len = json_string_length(v);
	return (0);
}

int
tool_arg_int(struct tool_call *call, const char *field, int required,
    long long min, long long max, long long def, long long *out)
{
	json_t *v = tool_field(call, field);
	long long n;

	if (v == NULL) {
		if (required)
			return (tool_missing(call, field));
		*out = def;
		return (0);
	}
	if (json_is_integer(v))
		n = json_integer_value(v);
	else if (json_is_real(v) &&
	    json_real_value(v) == floor(json_real_value(v)) &&
	    fabs(json_real_value(v)) < 9e15)
		n = (long long)json_real_value(v); /* 3.0 is an integer */
	else
		return (tool_wrong_type(call, field, "an integer", v));
	if (n < min || n > max)
		return (tool_fail(call, BD_EBOUNDS,
		    "field '%s' is %lld, outside %lld..%lld", field, n, min,
		    max));
	*out = n;
	return (0);
}

int
tool_arg_num(struct tool_call *call, const char *field, int required,
    double min, double max, double def, double *out)
{
	json_t *v = tool_field(call, field);
	double d;

	if (v == NULL) {
		if (required)
			return (tool_missing(call, field));
		*out = def;
		return (0);
	}
	if (!json_is_number(v))
		return (tool_wrong_type(call, field, "a number", v));
	d = json_number_value(v);
	if (!(d >= min && d <= max))
		return (tool_fail(call, BD_EBOUNDS,
		    "field '%s' is %g, outside %g..%g", field, d, min, max));
	*out = d;
	return (0);
}

int
tool_arg_bool(struct tool_call *call, const char *field, int def, int *out)
{
	json_t *v = tool_field(call, field);

	if (v == NULL) {
		*out = def;
		return (0);
	}
	if (!json_is_boolean(v))
		return (tool_wrong_type(call, field, "a boolean", v));
	*out = json_is_true(v);
	return (0);
}

int
tool_arg_pair(struct tool_call *call, const char *field, int required, int *a,
    int *b, int *present)
{
	json_t *v = tool_field(call, field);
	json_t *e[2];

	if (present != NULL)
		*present = v != NULL;
	if (v == NULL)
		return (required ? tool_missing(call, field) : 0);
	if (!json_is_array(v) || json_array_size(v) != 2)
		return (tool_fail(call, BD_EBADREQ,
		    "field '%s' must be an array of two integers [x, y]",
		    field));
	for (int i = 0; i < 2; i++) {
		e[i] = json_array_get(v, (size_t)i);
		if (!json_is_number(e[i]) ||
		    json_number_value(e[i]) != floor(json_number_value(e[i])) ||
		    fabs(json_number_value(e[i])) > 1e9)
			return (tool_fail(call, BD_EBADREQ,
			    "field '%s' must be an array of two integers "
			    "[x, y]",
			    field));
	}
	*a = (int)json_number_value(e[0]);
	*b = (int)json_number_value(e[1]);
	return (0);
}

int
tool_arg_base64(struct tool_call *call, const char *field, int required,
    uint8_t **out, size_t *len)
{
	const char *s;
	size_t slen;

	*out = NULL;
	*len = 0;
	if (tool_arg_strn(call, field, required, (size_t)-1, &s, &slen) != 0)
		return (call->code);
	if (s == NULL)
		return (0);
	if (tool_b64_decode(s, slen, out, len) != 0)
		return (tool_fail(call, BD_EINVAL,
		    "field '%s' is not valid base64", field));
	return (0);
}

/* --- reply --------------------------------------------------------------- */

void
tool_set_json(struct tool_call *call, const char *field, json_t *v)
{
	if (v != NULL)
		json_object_set_new(call->reply, field, v);
}

void
tool_set_str(struct tool_call *call, const char *field, const char *s)
{
	tool_set_strn(call, field, s, strlen(s));
}

json_t *
tool_json_text(const char *s, size_t len)
{
	json_t *v = json_stringn(s, len);
	char *fixed;
	size_t n = 0;

	if (v != NULL)
		return (v);
	/* Not UTF-8 (a program's raw output, a window title): replace each
	 * bad byte with U+FFFD rather than lose the whole text. */
	if ((fixed = malloc(len * 3 + 1)) == NULL)
		return (NULL);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int k = utf8_decode((const unsigned char *)s + i, len - i, &cp);

		if (k > 0) {
			memcpy(fixed + n, s + i, (size_t)k);
			n += (size_t)k;
			i += (size_t)k;
			continue;
		}
		memcpy(fixed + n, "\xef\xbf\xbd", 3);
		n += 3;
		i++;
	}
	v = json_stringn(fixed, n);
	free(fixed);
	return (v);
}

void
tool_set_strn(struct tool_call *call, const char *field, const char *s,
    size_t len)
{
	tool_set_json(call, field, tool_json_text(s, len));
}

void
tool_set_int(struct tool_call *call, const char *field, long long v)
{
	json_object_set_new(call->reply, field, json_integer(v));
}

void
tool_set_bool(struct tool_call *call, const char *field, int v)
{
	json_object_set_new(call->reply, field, json_boolean(v));
}

void
tool_set_output(struct tool_call *call, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) >= 0) {
		tool_set_str(call, "output", s);
		free(s);
	}
	va_end(ap);
}

int
tool_set_base64(struct tool_call *call, const char *field, const void *buf,
    size_t len)
{
	size_t n;
	char *s = tool_b64_encode(buf, len, &n);

	if (s == NULL)
		return (tool_fail(call, BD_EINTERNAL, "out of memory"));
	json_object_set_new(call->reply, field, json_stringn_nocheck(s, n));
	free(s);
	return (0);
}

void
tool_set_image(struct tool_call *call, const char *mime, uint8_t *buf,
    size_t len, int width, int height, uint64_t frame)
{
	cap_free(call->image.buf);
	call->image = (struct tool_image){ .mime = mime,
		.buf = buf,
		.len = len,
		.width = width,
		.height = height,
		.frame = frame };
}

/* --- base64 and time ----------------------------------------------------- */

char *
tool_b64_encode(const void *buf, size_t len, size_t *outlen)
{
	size_t cap = sodium_base64_ENCODED_LEN(len,
	    sodium_base64_VARIANT_ORIGINAL);
	char *s = malloc(cap);

	if (s == NULL)
		return (NULL);
	sodium_bin2base64(s, cap, buf, len, sodium_base64_VARIANT_ORIGINAL);
	*outlen = cap - 1;
	return (s);
}

int
tool_b64_decode(const char *s, size_t slen, uint8_t **out, size_t *len)
{
	size_t cap = slen / 4 * 3 + 3;
	uint8_t *buf = malloc(cap > 0 ? cap : 1);
	const char *end;

	if (buf == NULL)
		return (-1);
	/* Whitespace (line-wrapped base64) is ignored; padding optional. */
	if (sodium_base642bin(buf, cap, s, slen, " \t\r\n", len, &end,
	        sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    end != s + slen) {
		if (sodium_base642bin(buf, cap, s, slen, " \t\r\n", len, &end,
		        sodium_base64_VARIANT_ORIGINAL_NO_PADDING) != 0 ||
		    end != s + slen) {
			free(buf);
			return (-1);
		}
	}
	*out = buf;
	return (0);
}

uint64_t
tool_now_ns(void)
{
	return (x11_now_ns());
}

double
tool_now_ms(void)
{
	return (x11_now_ms());
}
