/*
 * runtime/main.c: bureaud's start-up and shutdown.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/config.h"
#include "runtime/log.h"
#include "runtime/server.h"

int
main(int argc, char **argv)
{
	struct bd_config cfg;
	struct bd_server *srv = NULL;
	char *cause = NULL;
	sigset_t set;
	int rv, sig;

	rv = bd_config_load(&cfg, argc, argv, &cause);
	if (rv != 0) {
		if (rv < 0)
			fprintf(stderr, "bureaud: %s\n",
			    cause != NULL ? cause : "invalid command line");
		free(cause);
		bd_config_clear(&cfg);
		return (rv < 0 ? 2 : 0);
	}
	if (bd_config_token(&cfg, &cause) != 0) {
		fprintf(stderr, "bureaud: %s\n", cause != NULL ? cause : "token");
		return (2);
	}
	/* Shells and programs started by tools must not inherit the token. */
	unsetenv("BUREAU_TOKEN");
	if (cfg.token == NULL) {
		for (int i = 0; i < cfg.nlisten; i++) {
			if (bd_url_is_local(cfg.listen[i]))
				continue;
			if (!cfg.insecure) {
				fprintf(stderr, "bureaud: refusing to listen on "
				    "'%s' without a token: give --token-file "
				    "or $BUREAU_TOKEN, or --insecure\n",
				    cfg.listen[i]);
				bd_config_clear(&cfg);
				return (2);
			}
			bd_warn("listening on '%s' without a token (--insecure)",
			    cfg.listen[i]);
		}
	}

	/* Signals go to this thread alone (sigwait below); every thread
	 * created from here on inherits the mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (bd_events_open(cfg.events, &cause) != 0) {
		fprintf(stderr, "bureaud: %s\n", cause != NULL ? cause : "events");
		return (1);
	}
	cfg.tool.publish = cfg.events != NULL && *cfg.events != '\0' ?
	    bd_events_publish : NULL;
	for (const struct tool_entry *const *t = tool_table; *t != NULL; t++) {
		if ((*t)->init == NULL)
			continue;
		cause = NULL;
		if ((*t)->init(&cfg.tool, &cause) != 0)
			bd_warn("tool '%s' unavailable: %s", (*t)->name,
			    cause != NULL ? cause : "init failed");
		free(cause);
	}
	cause = NULL;
	if (bd_server_start(&cfg, &srv, &cause) != 0) {
		fprintf(stderr, "bureaud: %s\n", cause != NULL ? cause : "start");
		free(cause);
		bd_events_close();
		return (1);
	}
	bd_info("bureaud %s ready (%d workers, token %s)", BUREAU_VERSION,
	    cfg.workers, cfg.token != NULL ? "required" : "off");

	do {
		if (sigwait(&set, &sig) != 0)
			break;
	} while (sig == SIGHUP); /* reserved: reload */
	bd_info("signal %d: shutting down", sig);
	bd_server_stop(srv);
	for (const struct tool_entry *const *t = tool_table; *t != NULL; t++)
		if ((*t)->fini != NULL)
			(*t)->fini();
	bd_events_close();
	bd_config_clear(&cfg);
	return (0);
}
