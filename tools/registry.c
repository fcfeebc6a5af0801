/* tools/registry.c: the table the runtime dispatches on. */
#include <string.h>

#include "tools/computer.h"
#include "tools/tool.h"

extern const struct tool_entry tool_system_entry;
extern const struct tool_entry tool_bash_entry;
extern const struct tool_entry tool_process_entry;
extern const struct tool_entry tool_file_entry;
extern const struct tool_entry tool_editor_entry;
extern const struct tool_entry tool_window_entry;
extern const struct tool_entry tool_clipboard_entry;
extern const struct tool_entry tool_accessibility_entry;

const struct tool_entry *const tool_table[] = {
	&tool_computer_entry,
	&tool_system_entry,
	&tool_bash_entry,
	&tool_process_entry,
	&tool_file_entry,
	&tool_editor_entry,
	&tool_window_entry,
	&tool_clipboard_entry,
	&tool_accessibility_entry,
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
