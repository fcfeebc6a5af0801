/*
 * runtime/main.c: bureaud's start-up and shutdown.
 */
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/config.h"
#include "runtime/frames.h"
#include "runtime/log.h"
#include "runtime/server.h"

int
main(int argc, char **argv)
{
	struct bd_config cfg;
	struct bd_server *srv = NULL;
	char *cause = NULL;
	sigset_t set;
	int rv, sig, status = 1, events = 0, tools = 0;

	/* Frames and file payloads are megabytes, served from several
	 * threads: a fixed mmap threshold gives them back to the system on
	 * free, instead of glibc's rising threshold keeping tens of MB of
	 * freed buffers in per-thread arenas for the daemon's lifetime. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	rv = bd_config_load(&cfg, argc, argv, &cause);
	if (rv != 0) {
		status = rv < 0 ? 2 : 0;
		goto out;
	}
	if (bd_config_token(&cfg, &cause) != 0) {
		status = 2;
		goto out;
	}
	/* Shells and programs started by tools must not inherit the token,
	 * and /proc/PID/environ must not show it. */
	bd_config_scrub_env();
	for (int i = 0; cfg.token == NULL && i < cfg.nlisten; i++) {
		if (bd_url_is_local(cfg.listen[i]))
			continue;
		if (!cfg.insecure) {
			if (asprintf(&cause,
			        "refusing to listen on '%s' without "
			        "a token: give --token-file or $BUREAU_TOKEN, "
			        "or "
			        "--insecure",
			        cfg.listen[i]) < 0)
				cause = NULL;
			status = 2;
			goto out;
		}
		bd_warn("listening on '%s' without a token (--insecure)",
		    cfg.listen[i]);
	}
	/* Without a token the events are plain (typed text, commands, the
	 * screen): publishing them off this machine is --insecure too. */
	if (cfg.token == NULL && cfg.events != NULL && *cfg.events != '\0' &&
	    !bd_url_is_local(cfg.events)) {
		if (!cfg.insecure) {
			if (asprintf(&cause,
			        "refusing to publish events on "
			        "'%s' without a token: they would be readable "
			        "by anyone; give --token-file or "
			        "$BUREAU_TOKEN, "
			        "or --insecure",
			        cfg.events) < 0)
				cause = NULL;
			status = 2;
			goto out;
		}
		bd_warn("publishing plain events on '%s' without a token "
		        "(--insecure)",
		    cfg.events);
	}

	/* Signals go to this thread alone (sigwait below); every thread
	 * created from here on inherits the mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (bd_events_open(cfg.events, cfg.token, cfg.token_len, &cause) != 0)
		goto out;
	events = 1;
	cfg.tool.publish = cfg.events != NULL && *cfg.events != '\0' ?
	    bd_events_publish :
	    NULL;
	tools = 1;
	for (const struct tool_entry *const *t = tool_table; *t != NULL; t++) {
		char *why = NULL;

		if ((*t)->init != NULL && (*t)->init(&cfg.tool, &why) != 0)
			bd_warn("tool '%s' unavailable: %s", (*t)->name,
			    why != NULL ? why : "init failed");
		free(why);
	}
	bd_frames_start(&cfg.tool);
	if (bd_server_start(&cfg, &srv, &cause) != 0)
		goto out;
	bd_info("bureaud %s ready (%d workers, token %s)", BUREAU_VERSION,
	    cfg.workers, cfg.token != NULL ? "required" : "off");

	for (;;) {
		char *why = NULL;
		int r;

		if (sigwait(&set, &sig) != 0 || sig != SIGHUP)
			break;
		/* SIGHUP: the token again (a cloned desktop's guest has
		 * written its own); the old one is refused from now on. */
		r = bd_config_reload_token(&cfg, &why);
		if (r < 0) {
			bd_warn("SIGHUP: token kept: %s",
			    why != NULL ? why : "cannot read it");
		} else if (r > 0) {
			pthread_rwlock_rdlock(&bd_token_lock);
			bd_events_rekey(cfg.token, cfg.token_len);
			pthread_rwlock_unlock(&bd_token_lock);
			bd_info("SIGHUP: new token in force");
		}
		free(why);
	}
	bd_info("signal %d: shutting down", sig);
	/* Waits end first, then the workers are joined, and only then are
	 * the tools torn down: a worker still in `wait` or a shell command
	 * once ran on after its display was closed. */
	tool_shutdown();
	if (bd_server_stop(srv) != 0)
		tools = 0; /* a worker is still in a tool: leave it be */
	srv = NULL;
	status = 0;
out:
	if (cause != NULL || status == 1)
		fprintf(stderr, "bureaud: %s\n",
		    cause != NULL ? cause : "cannot start");
	free(cause);
	if (tools)
		bd_frames_stop();
	if (tools)
		for (const struct tool_entry *const *t = tool_table; *t != NULL;
		     t++)
			if ((*t)->fini != NULL)
				(*t)->fini();
	if (events)
		bd_events_close();
	bd_config_clear(&cfg);
	return (status);
}
