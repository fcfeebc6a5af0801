/*
 * runtime/config.h: bureaud's settings, from the command line and an
 * optional configuration file (`key = value` lines with the long option
 * names as keys; the command line wins).
 */
#ifndef BUREAU_RUNTIME_CONFIG_H
#define BUREAU_RUNTIME_CONFIG_H

#include <pthread.h>

#include <stddef.h>

#include "runtime/protocol.h"
#include "tools/tool.h"

#define BD_MAX_LISTEN 16

struct bd_config {
	char *display;
	char *listen[BD_MAX_LISTEN];
	int nlisten;
	int listen_default; /* listen[] holds the defaults */
	char *events;       /* PUB socket URL, "" to disable */
	char *token_file;
	char *token; /* NULL: no auth */
	size_t token_len;
	int insecure;
	int workers; /* REP contexts served at once */
	size_t max_request;
	int reply_timeout_ms; /* bound on a reply waiting for its peer */
	char **allow;         /* policy: "tool" or "tool.action" */
	int nallow;
	char *scale;
	char *root;
	struct tool_config tool;
};

/*
 * Fill cfg from argv (and the --config file). Returns 0, 1 when the
 * command line asked for --help or --version (already printed), or -1
 * with *cause.
 */
int bd_config_load(struct bd_config *cfg, int argc, char **argv, char **cause);

/* Find the token: --token-file, $BUREAU_TOKEN, then QEMU fw_cfg. */
int bd_config_token(struct bd_config *cfg, char **cause);

/*
 * SIGHUP: read the token file (--token-file, else fw_cfg) again and
 * swap it in under bd_token_lock, so that a desktop cloned from a saved
 * state (its guest wrote its own token to /run/bureau/token) refuses the
 * token of the state it was cloned from. A daemon without a token file,
 * or one started without a token, keeps what it has. 1 when the token
 * changed, 0 when it stayed, -1 with *cause (the old token stays).
 */
int bd_config_reload_token(struct bd_config *cfg, char **cause);
/* Held (read) while cfg->token is compared, (write) while it changes. */
extern pthread_rwlock_t bd_token_lock;

/* Remove $BUREAU_TOKEN from the environment and wipe its value from the
 * process's initial environment block (/proc/PID/environ). Call once the
 * token was copied by bd_config_token, before any thread starts. */
void bd_config_scrub_env(void);

/* Is this listen URL reachable only from this machine? */
int bd_url_is_local(const char *url);

/* Is (tool, action) allowed by the policy? No allow list allows all. */
int bd_config_allows(const struct bd_config *cfg, const char *tool,
    const char *action);

void bd_config_clear(struct bd_config *cfg);

#endif
