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
		const struct tool_action *a, *b;

		/* each name once, though the computer lists some under both
		 * "action" and "type" */
		for (a = (*t)->actions; a != NULL && a->name != NULL; a++) {
			for (b = (*t)->actions; b != a; b++)
				if (strcmp(b->name, a->name) == 0)
					break;
			if (b == a)
				json_array_append_new(acts,
				    json_string(a->name));
		}
		json_object_set_new(tools, (*t)->name, acts);
	}
	return (tools);
}

static int
sys_ping(struct tool_call *call)
{
	tool_set_output(call, "pong");
	return (0);
}

static int
sys_info(struct tool_call *call)
{
	const char *display, *cause;
	int sw, sh, dw, dh;

	tool_set_str(call, "version", BUREAU_VERSION);
	tool_set_int(call, "protocol", BUREAU_PROTOCOL);
	tool_set_int(call, "pid", (long long)getpid());
	/* Clients refuse a larger request themselves: nng would drop it
	 * with the connection and they could not tell why. */
	tool_set_int(call, "max_request", (long long)call->cfg->max_request);
	tool_set_json(call, "uptime_s",
	    json_real((double)(tool_now_ns() - sys_started_ns) / 1e9));
	tool_set_json(call, "capabilities", sys_capabilities());
	/* the screenshot code chosen for this CPU and build */
	tool_set_json(call, "screenshots",
	    json_pack("{s:s, s:s, s:i}", "scale", cap_scale_simd(-1), "png",
	        cap_png_encoder(), "png_level", CAP_PNG_LEVEL));
	if (tool_computer_geometry(&sw, &sh, &dw, &dh, &display, &cause) == 0) {
		tool_set_str(call, "display", display);
		tool_set_json(call, "screen",
		    json_pack("{s:i, s:i}", "width", sw, "height", sh));
		tool_set_json(call, "scaled",
		    json_pack("{s:i, s:i}", "width", dw, "height", dh));
		tool_set_output(call,
		    "bureaud %s, protocol %d, screen %dx%d, "
		    "screenshots %dx%d",
		    BUREAU_VERSION, BUREAU_PROTOCOL, sw, sh, dw, dh);
	} else {
		tool_set_str(call, "display_error", cause);
		tool_set_output(call, "bureaud %s, protocol %d, no display: %s",
		    BUREAU_VERSION, BUREAU_PROTOCOL, cause);
	}
	return (0);
}

static const struct tool_action sys_actions[] = {
	{ "ping", "action", sys_ping, 1 },
	{ "info", "action", sys_info, 1 },
	{ NULL, NULL, NULL, 0 },
};

const struct tool_entry tool_system_entry = {
	.name = "system",
	.init = sys_init,
	.actions = sys_actions,
};
