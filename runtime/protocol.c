#include "runtime/protocol.h"

static const char *const bd_err_names[BD_NERR] = {
	[BD_OK] = "ok",
	[BD_EBADREQ] = "bad_request",
	[BD_EUNAUTH] = "unauthorized",
	[BD_EUNKNOWN_TOOL] = "unknown_tool",
	[BD_EUNKNOWN_ACTION] = "unknown_action",
	[BD_EINVAL] = "invalid_argument",
	[BD_EBOUNDS] = "out_of_bounds",
	[BD_ETIMEOUT] = "timeout",
	[BD_ENOTFOUND] = "not_found",
	[BD_EPERM] = "permission_denied",
	[BD_EIO] = "io_error",
	[BD_ETOOLARGE] = "too_large",
	[BD_EBUSY] = "busy",
	[BD_EINTERNAL] = "internal",
};

const char *
bd_err_name(enum bd_err err)
{
	if ((int)err < 0 || err >= BD_NERR)
		return ("internal");
	return (bd_err_names[err]);
}
