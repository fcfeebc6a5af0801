/*
 * `bureau log NAME --export FILE.html [--since T]`: the desktop's audit
 * trail (../agent/audit.h) as one self-contained page that replays the
 * session step by step, each input action with its settled screenshot
 * inline (web/replay/replay.html is the page, built into the binary).
 */
#ifndef BUREAU_CLI_REPLAY_H
#define BUREAU_CLI_REPLAY_H

/*
 * Parse --since's T: an ISO 8601 time ("2026-12-05T11:30:00Z" in UTC,
 * "2026-12-05 11:30" or "2026-12-05" in local time), "@SECONDS" (a Unix
 * time), or a duration ago ("90s", "10m", "2h", "1d"). 0 with *out in Unix
 * seconds, else -1 and *cause (malloc'd) naming the option and the value.
 */
int replay_parse_since(const char *s, double *out, char **cause);

/*
 * Write the page for the trail in dir (the desktop's directory) of
 * desktop name to path (atomically), with the steps at or after since (0:
 * all). *steps and *shots (may be NULL) get what it holds. 0, or -1 and
 * *cause (malloc'd).
 */
int replay_export(const char *dir, const char *name, const char *path,
    double since, long *steps, long *shots, char **cause);

#endif
