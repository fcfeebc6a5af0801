/*
 * tools/policy.h: confined file-system access for the file and editor tools.
 *
 * A client path is resolved below the root directory (--root) when one is
 * set: `..` that climbs above it, absolute paths outside it and symlinks
 * that lead out of it (as the last component or a directory on the way)
 * are refused with permission_denied. Resolution happens in the kernel with
 * openat2(RESOLVE_BENEATH) where it exists, else component by component
 * with openat(O_NOFOLLOW) from the root's descriptor; either way the
 * operations that follow work on directory descriptors (the *at calls), so
 * a symlink swapped in after a check is never followed out of the root.
 * Without a root, paths are used as given.
 */
#ifndef BUREAU_TOOLS_POLICY_H
#define BUREAU_TOOLS_POLICY_H

#include <stddef.h>
#include <sys/stat.h>

#include "tools/tool.h"

/* A client path, resolved up to its last component. */
struct tool_fspath {
	int dirfd;          /* the directory holding the last component */
	char *name;         /* that component, "." for the root or "/" */
	char *rel;          /* the path below the root, or as given */
	const char *field;  /* the request field, for messages (borrowed) */
	const char *client; /* the path as the client wrote it (borrowed) */
};

/* Open the root directory once (the tools' init calls this; later calls
 * return at once). -1 with *cause (malloc'd) when the root is unusable. */
int tool_fs_init(const struct tool_config *cfg, char **cause);
/* The root's real path, or NULL when paths are not confined. */
const char *tool_fs_root(void);

/* Resolve `path` (the value of `field`) up to its last component, which
 * is not looked at. Errors name the field. tool_fs_release frees it. */
int tool_fs_resolve(struct tool_call *call, const char *field, const char *path,
    struct tool_fspath *fp);
void tool_fs_release(struct tool_fspath *fp);

/* open(2) the object itself; a final symlink is followed, never out of
 * the root. Returns 0 with *fd, or -1 with errno (no reply touched). */
int tool_fs_open(const struct tool_fspath *fp, int flags, mode_t mode, int *fd);
/* lstat(2) of the last component. 0 or -1 with errno. */
int tool_fs_lstat(const struct tool_fspath *fp, struct stat *st);

/* Replace the file with buf atomically: a temporary file in the same
 * directory, written, fsync'd, renamed over the name (a reader sees the
 * old file or the new one, never half). mode < 0 keeps an existing file's
 * mode, else 0666 & ~umask. When the name is a symlink (inside the root)
 * the file it points to is replaced and the link stays. Fails with a
 * reply error. */
int tool_fs_replace(struct tool_call *call, const struct tool_fspath *fp,
    const void *buf, size_t len, int mode);

/* mkdir -p: create `path` and the directories above it (mode for the new
 * ones), each confined. An existing directory is fine. */
int tool_fs_mkdirs(struct tool_call *call, const char *field, const char *path,
    mode_t mode);

/* Turn errno from an operation on fp into a reply error:
 * "path '/x/y': cannot open: no such file or directory". */
int tool_fs_fail(struct tool_call *call, const struct tool_fspath *fp, int err,
    const char *what);

#endif
