/*
 * Private to the desktop commands (desktop.c, image.c).
 */
#ifndef BUREAU_DESKTOP_H
#define BUREAU_DESKTOP_H

/* `bureau image ...` (image.c). */
int image_main(int argc, char **argv);

#endif
