/*
 * bureau: the host command line. main() looks the first word up in the
 * command tables of cli.h and hands it the rest of the arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-bridge/cli/cli.h"
#include "host-bridge/cli/remote.h"
#include "host-bridge/desk/desk.h"
#include "host-bridge/include/bureau.h"
#include "host-bridge/mc/mc.h"

#ifndef BUREAU_VERSION
#define BUREAU_VERSION "unknown"
#endif

/* Mission Control (../mc) is one command. */
static const struct cli_cmd mc_cmds[] = {
	{ "mission-control",
	    "mission-control [--listen 127.0.0.1:7380] [--token-file F] "
	    "[--print-url] [--insecure]",
	    mc_main },
	{ NULL, NULL, NULL },
};

static const struct cli_cmd *
tables(int i)
{
	switch (i) {
	case 0:
		return (cli_client_cmds);
	case 1:
		return (cli_desktop_cmds);
	case 2:
		return (cli_operator_cmds);
	case 3:
		return (mc_cmds);
	}
	return (NULL);
}
#define NTABLES 4

static const struct cli_cmd *
find(const char *name)
{
	const struct cli_cmd *t;
	int i;

	for (i = 0; i < NTABLES; i++) {
		if ((t = tables(i)) == NULL)
			continue;
		for (; t->name != NULL; t++)
			if (strcmp(t->name, name) == 0)
				return (t);
	}
	return (NULL);
}

static void
print_usage(FILE *f, const struct cli_cmd *cmd)
{
	const char *u = cmd->usage != NULL ? cmd->usage : cmd->name;

	/* Tables may write their lines with or without the program name. */
	if (strncmp(u, "bureau ", 7) == 0)
		fprintf(f, "  %s\n", u);
	else
		fprintf(f, "  bureau %s\n", u);
}

static void
usage(FILE *f)
{
	const struct cli_cmd *t;
	int i;

	fprintf(f, "usage: bureau COMMAND [ARGS]\n\ncommands:\n");
	for (i = 0; i < NTABLES; i++) {
		if ((t = tables(i)) == NULL)
			continue;
		for (; t->name != NULL; t++)
			print_usage(f, t);
	}
	fprintf(f, "  bureau help [COMMAND]\n  bureau --version\n");
	fprintf(f,
	    "\nA desktop NAME resolves through $BUREAU_HOME/NAME "
	    "(default ~/.local/share/bureau/NAME).\nA new desktop's NAME "
	    "is its guest's hostname: lowercase letters, digits and '-',\n"
	    "1 to 63, not starting or ending with '-'.\n");
}

/*
 * The programs bureau runs that Debian puts in /usr/sbin (mke2fs, nft,
 * ip, libvirtd) are not on a normal user's PATH, and a user without root
 * runs desktops too (docs/desktops.md): the sbin directories are looked
 * in last, after whatever the PATH says.
 */
static void
path_with_sbin(void)
{
	const char *p = getenv("PATH");
	char *np;

	if (p == NULL || *p == '\0')
		p = "/usr/local/bin:/usr/bin:/bin";
	if ((strstr(p, "/usr/sbin") != NULL && strstr(p, ":/sbin") != NULL) ||
	    (np = malloc(strlen(p) + sizeof ":/usr/sbin:/sbin")) == NULL)
		return;
	strcpy(np, p);
	if (strstr(p, "/usr/sbin") == NULL)
		strcat(np, ":/usr/sbin");
	if (strstr(p, ":/sbin") == NULL && strncmp(p, "/sbin", 5) != 0)
		strcat(np, ":/sbin");
	setenv("PATH", np, 1);
	free(np);
}

int
main(int argc, char **argv)
{
	const struct cli_cmd *cmd;
	const char *name;

	if (argc < 2) {
		usage(stderr);
		return (2);
	}
	path_with_sbin();
	name = argv[1];
	if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 ||
	    strcmp(name, "-h") == 0) {
		if (argc > 2) {
			if ((cmd = find(argv[2])) == NULL) {
				fprintf(stderr,
				    "bureau: unknown command '%s'; run "
				    "'bureau help' for the list\n",
				    argv[2]);
				return (2);
			}
			printf("usage:\n");
			print_usage(stdout, cmd);
			return (0);
		}
		usage(stdout);
		return (0);
	}
	if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
		printf("bureau %s (protocol %d)\n", BUREAU_VERSION,
		    BUREAU_PROTOCOL);
		return (0);
	}
	if ((cmd = find(name)) == NULL) {
		fprintf(stderr,
		    "bureau: unknown command '%s'; run 'bureau help' for the "
		    "list\n",
		    name);
		return (2);
	}
	/* a desktop on another machine: the command runs there (remote.c);
	 * the lifecycle library (Mission Control's, an agent's) reaches
	 * the bureau there through the same transport */
	desk_set_remote(remote_desk_run);
	{
		int rc;

		if (argc >= 3 && remote_dispatch(argc, argv, &rc))
			return (rc);
	}
	return (cmd->run(argc - 1, argv + 1));
}
