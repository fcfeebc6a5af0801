/*
 * fuzz_dispatch: the whole request path, bd_dispatch with the real tool
 * table: JSON parsing, auth, action resolution, policy, argument
 * validation and the handlers of the tools that are safe to run at
 * millions of requests.
 *
 * Every input is served twice: by a daemon that requires a token (what
 * production runs; the seeds carry the token, so mutations that keep it
 * get past auth) and by one without (so mutations that break the token
 * still reach the tools).
 *
 * Confinement, and why:
 * - --root is a scratch directory: file and editor requests really create,
 *   edit and remove files, inside it only. It is emptied before every
 *   input, so an input does the same thing whatever ran before it: a
 *   crash found is reproduced by its file alone, and the committed
 *   regressions replay deterministically (a few microseconds per run).
 * - --allow leaves out bash, process and window.launch: they fork shells
 *   and programs, which at fuzzing rates would be a fork bomb and would
 *   make runs depend on the machine. They are driven by the soak instead
 *   (tests/soak), with the real daemon.
 * - DISPLAY is unset unless BUREAU_FUZZ_DISPLAY names a private X server
 *   (opt-in, see docs/hardening.md): computer, window and clipboard then
 *   answer their typed "no display" error. Their X paths carry waits the
 * request controls (settle_ms, wait, hold_key, the keyboard's rebind grace),
 * which would turn each execution into milliseconds or seconds; the key-combo
 * parser they use is fuzzed on its own (fuzz_keyname) and the X paths run in
 *   the soak on a real Xvfb.
 *
 * Invariants checked (abort on failure, so libFuzzer reports a crash): a
 * reply always comes back, its length is right, it is a JSON object with
 * a boolean "ok", and a failure carries an error {code, message} of
 * strings; every published audit event is valid JSON.
 */
#include <ftw.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/config.h"
#include "runtime/dispatch.h"
#include "tools/tool.h"

#define BD_FUZZ_TOKEN "fuzz-token-0123456789"

/* Every tool and action but those that start processes. */
#define BD_FUZZ_ALLOW                                                          \
	"system,file,str_replace_based_edit_tool,text_editor,"                 \
	"clipboard,window.list,window.activate,window.close,window.move,"      \
	"window.resize"

/* With an X server: every computer action but wait and hold_key. */
#define BD_FUZZ_ALLOW_X                                                        \
	BD_FUZZ_ALLOW                                                          \
	",computer.screenshot,computer.zoom"                                   \
	",computer.cursor_position,computer.mouse_move"                        \
	",computer.left_click,computer.right_click"                            \
	",computer.middle_click,computer.double_click"                         \
	",computer.triple_click,computer.left_click_drag"                      \
	",computer.left_mouse_down,computer.left_mouse_up"                     \
	",computer.scroll,computer.type,computer.key"                          \
	",computer.click,computer.drag,computer.keypress"                      \
	",computer.move"

static const char *allow = BD_FUZZ_ALLOW ",computer";
static struct bd_config cfg_auth, cfg_open;
static char scratch[] = "/tmp/bureau-fuzz-XXXXXX";
static char root[sizeof scratch + 8];

static void
fuzz_die(const char *what, const char *text, size_t len)
{
	fprintf(stderr, "fuzz_dispatch: %s: %.*s\n", what,
	    (int)(len > 2000 ? 2000 : len), text != NULL ? text : "(null)");
	abort();
}

/* The audit trail must stay valid JSON whatever the request held. */
static void
fuzz_publish(const char *topic, const char *json, const void *body,
    size_t bodylen)
{
	json_t *ev;

	(void)body;
	(void)bodylen;
	if (strcmp(topic, "action") != 0)
		return;
	if ((ev = json_loads(json, 0, NULL)) == NULL || !json_is_object(ev))
		fuzz_die("audit event is not a JSON object", json,
		    strlen(json));
	json_decref(ev);
}

static int
fuzz_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (ftw->level > 0)
		remove(path);
	return (0);
}

static void
fuzz_wipe(void)
{
	nftw(root, fuzz_rm, 16, FTW_DEPTH | FTW_PHYS);
}

static void
fuzz_cleanup(void)
{
	fuzz_wipe();
	rmdir(root);
	rmdir(scratch);
}

static void
fuzz_load(struct bd_config *cfg, const char *token_file)
{
	char *argv[] = { "bureaud", "--listen", "tcp://127.0.0.1:1", "--root",
		root, "--allow", BD_FUZZ_ALLOW, "--token-file",
		(char *)token_file, NULL };
	int argc = token_file != NULL ? 9 : 7;
	char *cause = NULL;

	if (bd_config_load(cfg, argc, argv, &cause) != 0 ||
	    bd_config_token(cfg, &cause) != 0)
		fuzz_die("config", cause, cause != NULL ? strlen(cause) : 0);
	cfg->tool.publish = fuzz_publish;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char tokfile[sizeof scratch + 16];
	const char *x;
	FILE *f;

	(void)argc;
	(void)argv;
	/* Opt-in: the X tools on a private server, without the actions
	 * that only wait (their durations come from the request). */
	x = getenv("BUREAU_FUZZ_DISPLAY");
	if (x != NULL && *x != '\0') {
		setenv("DISPLAY", x, 1);
		allow = BD_FUZZ_ALLOW_X;
	} else
		unsetenv("DISPLAY");
	unsetenv("BUREAU_TOKEN");
	if (mkdtemp(scratch) == NULL) {
		perror("mkdtemp");
		abort();
	}
	/* The token lives beside the root, where file requests cannot
	 * read it. */
	snprintf(root, sizeof root, "%s/root", scratch);
	snprintf(tokfile, sizeof tokfile, "%s/token", scratch);
	if (mkdir(root, 0700) != 0 || (f = fopen(tokfile, "w")) == NULL) {
		perror(root);
		abort();
	}
	fputs(BD_FUZZ_TOKEN "\n", f);
	fclose(f);
	fuzz_load(&cfg_auth, tokfile);
	fuzz_load(&cfg_open, NULL);
	unlink(tokfile);
	atexit(fuzz_cleanup);

	/* As bureaud's main does; the X tools fail with their cause. */
	for (const struct tool_entry *const *t = tool_table; *t != NULL; t++) {
		char *why = NULL;

		if ((*t)->init == NULL || strcmp((*t)->name, "bash") == 0 ||
		    strcmp((*t)->name, "process") == 0)
			continue;
		(void)(*t)->init(&cfg_auth.tool, &why);
		free(why);
	}
	return (0);
}

static void
fuzz_serve(const struct bd_config *cfg, const uint8_t *data, size_t size)
{
	json_t *r, *ok, *err;
	size_t len = (size_t)-1;
	char *out;

	out = bd_dispatch(cfg, (const char *)data, size, 1, &len);
	if (out == NULL)
		fuzz_die("no reply", "", 0);
	if (len != strlen(out))
		fuzz_die("reply length is wrong", out, strlen(out));
	r = json_loadb(out, len, 0, NULL);
	if (r == NULL || !json_is_object(r))
		fuzz_die("reply is not a JSON object", out, len);
	ok = json_object_get(r, "ok");
	if (!json_is_boolean(ok))
		fuzz_die("reply has no boolean 'ok'", out, len);
	if (json_is_false(ok)) {
		err = json_object_get(r, "error");
		if (!json_is_object(err) ||
		    !json_is_string(json_object_get(err, "code")) ||
		    !json_is_string(json_object_get(err, "message")))
			fuzz_die("failed reply without error {code, message}",
			    out, len);
	}
	/* The secret is never part of a reply to a request that lacks it.
	 * Only asked of the daemon with a token: such a request is refused
	 * there before any tool runs, whereas the open daemon may read back
	 * a file an earlier input wrote. */
	if (cfg == &cfg_auth && strstr(out, BD_FUZZ_TOKEN) != NULL &&
	    memmem(data, size, BD_FUZZ_TOKEN, strlen(BD_FUZZ_TOKEN)) == NULL)
		fuzz_die("token leaked into a reply", out, len);
	json_decref(r);
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_wipe();
	fuzz_serve(&cfg_auth, data, size);
	fuzz_wipe();
	fuzz_serve(&cfg_open, data, size);
	return (0);
}
