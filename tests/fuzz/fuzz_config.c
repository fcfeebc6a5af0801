/*
 * fuzz_config: bureaud's configuration, bd_config_load, with a
 * configuration file and a command line both from the input.
 *
 * Input: the file's text, a NUL, then command-line arguments separated by
 * NULs (at most 32). The file is a memfd read through /proc/self/fd, so
 * the real fopen/fgets path runs without touching the disk.
 *
 * Left out, and why: arguments naming --config (a file the input chooses
 * could be /dev/zero or a FIFO, hanging the parse by design, not by bug);
 * the default ipc listener is kept out by a first --listen, since it
 * creates /run/bureau. --root and --token-file only stat or store.
 *
 * Checked (abort on failure): 0 or 1 or -1; -1 carries a cause; success
 * leaves settings inside their documented ranges; bd_config_clear frees
 * everything (LeakSanitizer checks).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/config.h"

#define FUZZ_MAX_ARGS 32

static int memfd = -1;
static char path[64];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if ((memfd = memfd_create("bureau-fuzz-config", 0)) < 0) {
		perror("memfd_create");
		abort();
	}
	snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
	/* --help and --version print to stdout; libFuzzer's report is on
	 * stderr. */
	if (freopen("/dev/null", "w", stdout) == NULL)
		abort();
	return (0);
}

static void
fuzz_die(const char *what, const char *cause)
{
	fprintf(stderr, "fuzz_config: %s: %s\n", what,
	    cause != NULL ? cause : "(no cause)");
	abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[FUZZ_MAX_ARGS + 6];
	const char *nul = memchr(data, '\0', size);
	size_t flen = nul != NULL ? (size_t)(nul - (const char *)data) : size;
	struct bd_config cfg;
	char *copy, *p, *end, *cause = NULL;
	int argc = 0, rv;

	if (ftruncate(memfd, 0) != 0 ||
	    pwrite(memfd, data, flen, 0) != (ssize_t)flen)
		abort();
	/* The arguments, NUL-terminated in a copy (one extra NUL at the
	 * end so the last one is terminated too). */
	if ((copy = malloc(size + 1)) == NULL)
		return (0);
	memcpy(copy, data, size);
	copy[size] = '\0';
	argv[argc++] = "bureaud";
	argv[argc++] = "--listen";
	argv[argc++] = "tcp://127.0.0.1:1";
	argv[argc++] = "--config";
	argv[argc++] = path;
	end = copy + size;
	for (p = nul != NULL ? copy + flen + 1 : end;
	     p < end && argc < FUZZ_MAX_ARGS + 5; p += strlen(p) + 1) {
		if (strstr(p, "config") != NULL) {
			free(copy);
			return (0);
		}
		argv[argc++] = p;
	}
	argv[argc] = NULL;

	rv = bd_config_load(&cfg, argc, argv, &cause);
	if (rv == -1 && cause == NULL)
		fuzz_die("failed without a cause", NULL);
	if (rv != -1 && cause != NULL)
		fuzz_die("a cause without failing", cause);
	if (rv != 0 && rv != 1 && rv != -1)
		fuzz_die("unexpected return", NULL);
	if (rv == 0) {
		if (cfg.nlisten < 1 || cfg.nlisten > BD_MAX_LISTEN ||
		    cfg.workers < 3 || cfg.workers > 256 ||
		    cfg.max_request < 4096 || cfg.tool.settle_ms < 0 ||
		    cfg.tool.settle_timeout_ms < 0 ||
		    cfg.tool.frame_interval_ms < 0 ||
		    cfg.tool.bash_output_max < 1024)
			fuzz_die("setting out of range", NULL);
		for (int i = 0; i < cfg.nlisten; i++)
			if (cfg.listen[i] == NULL)
				fuzz_die("NULL listen URL", NULL);
		for (int i = 0; i < cfg.nallow; i++)
			(void)bd_config_allows(&cfg, "file", "read");
	}
	free(cause);
	bd_config_clear(&cfg);
	free(copy);
	return (0);
}
