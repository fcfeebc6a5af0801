/*
 * Private to the desktop commands (desktop.c, image.c).
 */
#ifndef BUREAU_DESKTOP_H
#define BUREAU_DESKTOP_H

/* `bureau image ...` (image.c). */
int image_main(int argc, char **argv);

/* The sizes of a warm state other than the default's. */
struct warm_size {
	long memory_mb;
	int cpus;
	long long disk, home;
};

/* `bureau image warm [DIR]` (warm.c): make DIR's warm state (DIR NULL:
 * the image `create` would pick), DIR/warm; with sz, one of those sizes,
 * DIR/warm-MEMORY-CPUS-DISK-HOME, unless one that fits them is there. */
int image_warm(const char *dir, const struct warm_size *sz, char **cause);

#endif
