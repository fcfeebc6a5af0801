/*
 * tools/system.c: the system tool. `ping` answers at once; `info` says what
 * this daemon is and can do, so a client can adapt without guessing.
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/computer.h"
#include "tools/tool.h"

static uint64_t sys_started_ns;

static int
sys_init(const struct tool_config *cfg, char **cause)
{
	(void)cfg;
	(void)cause;
	sys_started_ns = tool_now_ns();
	return (0);
}

static json_t *
sys_capabilities(void)
{
	json_t *tools = json_object();

	for (const struct tool_entry *const *t = tool_table; *t != NULL; t++) {
		json_t *acts = json_array();

		for (const char *const *a = (*t)->actions; a != NULL && *a != NULL;
		    a++)
			json_array_append_new(acts, json_string(*a));
		json_object_set_new(tools, (*t)->name, acts);
	}
	return (tools);
}

static int
sys_handle(struct tool_call *call)
{
	const char *action, *display, *cause;
	int sw, sh, dw, dh;

	if (tool_arg_str(call, "action", 1, NULL, &action) != 0)
		return (call->code);
	if (strcmp(action, "ping") == 0) {
		tool_set_output(call, "pong");
		return (0);
	}
	if (strcmp(action, "info") != 0)
		return (tool_fail(call, BD_EUNKNOWN_ACTION,
		    "unknown action '%s' for tool 'system': expected ping or "
		    "info", action));
	tool_set_str(call, "version", BUREAU_VERSION);
	tool_set_int(call, "protocol", BD_PROTOCOL_VERSION);
	tool_set_int(call, "pid", (long long)getpid());
	/* Clients refuse a larger request themselves: nng would drop it
	 * with the connection and they could not tell why. */
	tool_set_int(call, "max_request", (long long)call->cfg->max_request);
	tool_set_json(call, "uptime_s",
	    json_real((double)(tool_now_ns() - sys_started_ns) / 1e9));
	tool_set_json(call, "capabilities", sys_capabilities());
	if (tool_computer_geometry(&sw, &sh, &dw, &dh, &display, &cause) == 0) {
		tool_set_str(call, "display", display);
		tool_set_json(call, "screen",
		    json_pack("{s:i, s:i}", "width", sw, "height", sh));
		tool_set_json(call, "scaled",
		    json_pack("{s:i, s:i}", "width", dw, "height", dh));
		tool_set_output(call, "bureaud %s, protocol %d, screen %dx%d, "
		    "screenshots %dx%d", BUREAU_VERSION, BD_PROTOCOL_VERSION, sw,
		    sh, dw, dh);
	} else {
		tool_set_str(call, "display_error", cause);
		tool_set_output(call, "bureaud %s, protocol %d, no display: %s",
		    BUREAU_VERSION, BD_PROTOCOL_VERSION, cause);
	}
	return (0);
}

static const char *const sys_actions[] = { "ping", "info", NULL };

static int
sys_quick(const char *action)
{
	(void)action;
	return (1);
}

const struct tool_entry tool_system_entry = {
	.name = "system",
	.init = sys_init,
	.handle = sys_handle,
	.actions = sys_actions,
	.quick = sys_quick,
};
