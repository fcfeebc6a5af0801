/*
 * Private to the desktop commands (desktop.c, image.c).
 */
#ifndef BUREAU_DESKTOP_H
#define BUREAU_DESKTOP_H

/* `bureau image ...` (image.c). */
int image_main(int argc, char **argv);

/* `bureau image warm [DIR]` (warm.c): make DIR's warm state (DIR NULL:
 * the image `create` would pick). */
int image_warm(const char *dir, char **cause);

#endif
