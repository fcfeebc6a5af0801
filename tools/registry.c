/* tools/registry.c: the table the runtime dispatches on. */
#include <string.h>

#include "tools/computer.h"
#include "tools/tool.h"

extern const struct tool_entry tool_system_entry;

const struct tool_entry *const tool_table[] = {
	&tool_computer_entry,
	&tool_system_entry,
	NULL,
};

const struct tool_entry *
tool_find(const char *name)
{
	for (const struct tool_entry *const *t = tool_table; *t != NULL; t++)
		if (strcmp((*t)->name, name) == 0 ||
		    ((*t)->alias != NULL && strcmp((*t)->alias, name) == 0))
			return (*t);
	return (NULL);
}
