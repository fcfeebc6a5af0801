/*
 * tools/clipboard.c: the clipboard tool. `get` reads the CLIPBOARD
 * selection as UTF-8 text; `set` makes the daemon its owner, serving the
 * value (x11/selection.c) until another client takes the clipboard.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/tool.h"
#include "x11/selection.h"

#define CB_MAX         (16u << 20) /* bytes of a clipboard value */
#define CB_TIMEOUT     5.0         /* s, default wait for the owner */
#define CB_TIMEOUT_MAX 60.0

static struct {
	struct x11_sel *sel;
	char *cause; /* why there is no connection, when sel is NULL */
} cb;

static int
cb_get(struct tool_call *call)
{
	unsigned long owner;
	double timeout;
	char *text = NULL, *cause = NULL;
	size_t len;
	int ours, rv;

	if (tool_arg_num(call, "timeout", 0, 0.1, CB_TIMEOUT_MAX, CB_TIMEOUT,
	        &timeout) != 0)
		return (call->code);
	rv = x11_sel_get(cb.sel, (int)(timeout * 1000), &text, &len, &owner,
	    &ours, &cause);
	if (rv == X11_SEL_TIMEOUT)
		return (tool_fail(call, BD_ETIMEOUT,
		    "the clipboard owner "
		    "(window 0x%lx) did not answer within %.1f s (field "
		    "'timeout')",
		    owner, timeout));
	if (rv == X11_SEL_CANCELED)
		return (tool_fail(call, BD_EBUSY,
		    "the clipboard owner (window 0x%lx) had not answered "
		    "when bureaud began shutting down",
		    owner));
	if (rv == X11_SEL_TOOLARGE)
		return (tool_fail(call, BD_ETOOLARGE,
		    "the clipboard holds "
		    "more than %u bytes",
		    CB_MAX));
	if (rv != 0) {
		tool_fail(call, BD_EIO, "%s",
		    cause != NULL ? cause : "cannot read the clipboard");
		free(cause);
		return (call->code);
	}
	tool_set_strn(call, "text", text, len);
	tool_set_json(call, "owner",
	    owner != 0 ? json_integer((json_int_t)owner) : json_null());
	tool_set_bool(call, "ours", ours);
	if (owner == 0)
		tool_set_output(call, "the clipboard is empty (no owner)");
	else
		tool_set_output(call, "%zu bytes of text", len);
	free(text);
	return (0);
}

static int
cb_set(struct tool_call *call)
{
	const char *text;
	char *cause = NULL;
	size_t len;
	int rv;

	if (tool_arg_strn(call, "text", 1, CB_MAX, &text, &len) != 0)
		return (call->code);
	if ((rv = x11_sel_set(cb.sel, text, len, &cause)) == X11_SEL_TOOLARGE)
		return (tool_fail(call, BD_ETOOLARGE,
		    "field 'text' is %zu "
		    "bytes, more than the limit of %u",
		    len, CB_MAX));
	if (rv != 0) {
		tool_fail(call, BD_EIO, "%s",
		    cause != NULL ? cause : "cannot own the clipboard");
		free(cause);
		return (call->code);
	}
	tool_set_output(call, "the clipboard holds %zu bytes of text", len);
	return (0);
}

static int
cb_prepare(struct tool_call *call)
{
	if (cb.sel == NULL)
		return (tool_fail(call, BD_EIO, "no display: %s",
		    cb.cause != NULL ? cb.cause : "not started"));
	return (0);
}

static int
cb_init(const struct tool_config *cfg, char **cause)
{
	/* a get waiting on a silent owner ends at shutdown */
	if (x11_sel_open(cfg->display, CB_MAX, tool_stopping, &cb.sel, cause) !=
	    0) {
		cb.cause = *cause != NULL ? strdup(*cause) : NULL;
		return (-1);
	}
	return (0);
}

static void
cb_fini(void)
{
	x11_sel_close(cb.sel);
	cb.sel = NULL;
	free(cb.cause);
	cb.cause = NULL;
}

static const struct tool_action cb_actions[] = {
	{ "get", "action", cb_get, 0 },
	{ "set", "action", cb_set, 0 },
	{ NULL, NULL, NULL, 0 },
};

const struct tool_entry tool_clipboard_entry = {
	.name = "clipboard",
	.init = cb_init,
	.fini = cb_fini,
	.actions = cb_actions,
	.prepare = cb_prepare,
};
