/*
 * host-bridge/store/files: the names a desktop's directory holds (store.h
 * says what each is), in one table, and the names at the top of the store
 * ($BUREAU_HOME) that are bureau's own files, never a desktop's name.
 *
 * `bureau send` carries the entries marked SF_SENT and leaves the others
 * out; `bureau receive` takes nothing else (cli/remote.c): a directory
 * from elsewhere holds only these names, as regular files or directories.
 */
#ifndef BUREAU_HB_FILES_H
#define BUREAU_HB_FILES_H

enum {
	SF_DIR = 1 << 0,   /* a directory (else a regular file) */
	SF_SENT = 1 << 1,  /* carried by send, taken by receive */
	SF_QCOW2 = 1 << 2, /* a qcow2 disk: its backing chain is checked */
	SF_LAYER = 1 << 3, /* a read-only disk layer a fork left */
	SF_RUN = 1 << 4,   /* there while it runs only (a socket, a pid) */
};

struct store_file {
	/* The name in the directory: exact, or with <hex> (one or more of
	 * 0-9a-f) or <n> (1 to 19 digits) standing for a part of it. */
	const char *name;
	int flags;
	const char *what;
};

/* Every entry, then one whose name is NULL. */
extern const struct store_file store_files[];

/* The entry whose name matches rel (a path under the desktop's
 * directory: "desktop.json", "audit", "audit/12.png"), or NULL. */
const struct store_file *store_file_find(const char *rel);

/* Does name match pattern (as store_file's name)? */
int store_file_match(const char *pattern, const char *name);

/* Is name one of the store's own files at the top of $BUREAU_HOME
 * (images, hosts.json, the Mission Control token...), which no desktop
 * may be named? */
int store_own_name(const char *name);

/*
 * A desktop's directory that came from elsewhere (bureau receive), checked
 * and made ours: every entry in it (and in its audit/) is one of the
 * table's that send carries, of its kind (a directory, or a regular file
 * of one link), owned by us; then each is made 0600 (a directory 0700),
 * whatever modes it came with. 0, or -1 with *cause naming the entry.
 */
int store_files_check(const char *dir, char **cause);

/*
 * The same directory's qcow2 disks (SF_QCOW2): each is a qcow2 image with
 * no external data file, whose backing file is none, a layer of its own
 * disk in this directory (system.qcow2 and system.L*: a system.L<hex>.qcow2
 * there, by its relative name; home.* the same), or for a system disk
 * base, the image's base disk; no chain loops. 0, or -1 with *cause
 * naming the disk and its backing.
 */
int store_disks_check(const char *dir, const char *base, char **cause);

#endif
