/*
 * The `bureau` host command line: main() in bureau.c looks the first word
 * up in these tables. Client commands (call, screenshot) live in client.c,
 * desktop management (image, create, start, stop, ...) in desktop.c and
 * image.c, over the desktop store (../store) and the VM backend (../vm);
 * attached desktops and the operator's commands over a desktop's host
 * agent (../agent, reached through ../opclient) in operator.c; Mission
 * Control (../mc) is bureau.c's own entry. Nothing below calls back up
 * into these files.
 *
 * A desktop NAME lives in $BUREAU_HOME/NAME (default
 * ~/.local/share/bureau/NAME). Two files there are the contract between the
 * desktop manager and the client commands:
 *   endpoint   one line: the REQ/REP URL of the desktop's host agent, in
 *              front of its daemon, e.g. tcp://127.0.0.1:7310
 *   token      the agent token (no trailing newline), mode 0600
 */
#ifndef BUREAU_CLI_H
#define BUREAU_CLI_H

struct cli_cmd {
	const char *name;
	const char *usage; /* one line, printed by `bureau help` */
	int (*run)(int argc, char **argv); /* argv[0] is the command name;
	                                      returns the exit status */
};

/* NULL-name-terminated tables. */
extern const struct cli_cmd cli_client_cmds[];   /* client.c */
extern const struct cli_cmd cli_desktop_cmds[];  /* desktop.c */
extern const struct cli_cmd cli_operator_cmds[]; /* operator.c */

#endif
