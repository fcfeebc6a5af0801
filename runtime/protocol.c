#include <stddef.h>

#include "runtime/protocol.h"

#define BD_ERR_NAME(n, suffix, name) [n] = name,
static const char *const bd_err_names[] = { [0] = "ok",
	BUREAU_PROTOCOL_ERRORS(BD_ERR_NAME) };
#undef BD_ERR_NAME

const char *
bd_err_name(int err)
{
	if (err < 0 ||
	    (size_t)err >= sizeof bd_err_names / sizeof bd_err_names[0] ||
	    bd_err_names[err] == NULL)
		return ("internal");
	return (bd_err_names[err]);
}
