/*
 * capture: framebuffer pixels -> scaled image -> PNG or JPEG.
 *
 * Everything here works on plain memory: no X11, no JSON. The x11 layer
 * fills a struct cap_image from the X server; tools call these functions to
 * crop, scale and encode it.
 *
 * Errors: functions return 0 on success or -1 and set *cause to a malloc'd,
 * lowercase message without a full stop (the caller frees it).
 */
#ifndef BUREAU_CAPTURE_H
#define BUREAU_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Pixels are 32 bits, bytes in memory B, G, R, X (X11 ZPixmap, depth 24/32,
 * little-endian). The X byte is ignored on input and undefined on output.
 */
struct cap_image {
	uint8_t *data; /* owner stated by whoever fills it */
	int width;
	int height;
	int stride; /* bytes from one row to the next, >= 4 * width */
};

/*
 * Scale src into dst. dst->data, width, height and stride must be set by the
 * caller (dst->data at least dst->stride * dst->height bytes). Downscaling
 * averages the exact source area under each destination pixel (box/area
 * filter), so text stays legible; upscaling interpolates bilinearly. Equal
 * sizes copy.
 */
int cap_scale(const struct cap_image *src, struct cap_image *dst, char **cause);

/*
 * PNG scanlines, the bytes a PNG of 8-bit RGB compresses: per row the
 * filter type None (0), then R, G, B of each pixel; rows of
 * CAP_SCANLINE(width) bytes back to back. Screenshots go from the frame
 * to scanlines in one row-wise pass (scaling included) and from there to
 * PNG or JPEG, with no full-size BGRX copy between.
 */
#define CAP_SCANLINE(w) (1 + 3 * (size_t)(w))

/* One row of width BGRX pixels as a scanline at out. */
void cap_scanline_put(const uint8_t *bgrx, int width, uint8_t *out);

/*
 * cap_scale into scanlines: out (height * CAP_SCANLINE(width) bytes) gets
 * exactly the pixels cap_scale would give a width x height image, each row
 * converted as soon as it is made. Equal sizes convert.
 */
int cap_scale_scanlines(const struct cap_image *src, int width, int height,
    uint8_t *out, char **cause);
/* The same, and *hash = cap_hash(src), computed as the rows are read for
 * scaling: the frame is read once. */
int cap_scale_scanlines_hash(const struct cap_image *src, int width, int height,
    uint8_t *out, uint64_t *hash, char **cause);

/*
 * The scaling code in use: "avx2", "sse2" or "c" (the plain C reference),
 * the best the CPU has unless capped: max 0 forces "c", 1 at most "sse2",
 * -1 only asks. All give identical pixels. Not thread-safe against
 * scaling in progress: set it before (tests, capbench).
 */
const char *cap_scale_simd(int max);

/*
 * A view of a rectangle inside src (no copy): dst shares src's memory.
 * Fails when the rectangle is empty or not inside src.
 */
int cap_crop(const struct cap_image *src, int x, int y, int w, int h,
    struct cap_image *dst, char **cause);

/*
 * Encode img as an 8-bit RGB PNG. level is the deflate level 0..9 (bureau
 * uses CAP_PNG_LEVEL: screenshots are sent once and read once). On success
 * *out is a buffer of *outlen bytes that the caller frees with cap_free.
 */
#define CAP_PNG_LEVEL                                                          \
	4 /* libpng for small images (libdeflate's level                       \
	   * when it is chosen), measured in png.c */
int cap_png_encode(const struct cap_image *img, int level, uint8_t **out,
    size_t *outlen, char **cause);

/* What compresses screenshots: "sdeflate" (static string). */
const char *cap_png_encoder(void);

/* As cap_png_encode, from width x height scanlines, which it filters in
 * place (the caller's rows are spent). */
int cap_png_encode_scanlines(uint8_t *rows, int width, int height, int level,
    uint8_t **out, size_t *outlen, char **cause);

/*
 * Encode img as a baseline JPEG (4:2:0) at quality 1..100. On success *out is
 * a buffer of *outlen bytes that the caller frees with cap_free.
 */
int cap_jpeg_encode(const struct cap_image *img, int quality, uint8_t **out,
    size_t *outlen, char **cause);
/* As cap_jpeg_encode, from width x height scanlines. */
int cap_jpeg_encode_scanlines(const uint8_t *rows, int width, int height,
    int quality, uint8_t **out, size_t *outlen, char **cause);

/*
 * 64-bit hash of the pixels (the X byte ignored), for telling whether the
 * screen changed between two captures.
 */
uint64_t cap_hash(const struct cap_image *img);
/* cap_hash in parts: the hash of one row of width pixels, and the image's
 * hash from its height row hashes in order (equal to cap_hash). */
uint64_t cap_hash_row(const uint8_t *row, int width);
uint64_t cap_hash_rows(const uint64_t *rows, int width, int height);

/*
 * Memory for frames and encoded images: 64-byte aligned, large blocks
 * backed by huge pages where the kernel allows (mem.c says why). Free with
 * cap_free (never free()). cap_alloc returns NULL when out of memory.
 */
void *cap_alloc(size_t n);
void cap_free(void *p);

/* --- geometry: screen space <-> screenshot space ------------------------ */

enum cap_scale_mode {
	CAP_SCALE_NONE,  /* screenshots at screen size */
	CAP_SCALE_AUTO,  /* the largest of 1024x768, 1280x800, 1366x768 that
	                    matches the screen's aspect ratio */
	CAP_SCALE_FIXED, /* a fixed WxH given by the operator */
};

/*
 * Parse "none", "auto" or "WxH" (each side 16..16384). Fills *mode and, for
 * WxH, *w and *h.
 */
int cap_scale_parse(const char *s, enum cap_scale_mode *mode, int *w, int *h,
    char **cause);

/*
 * The screenshot size for a screen of sw x sh under mode (w, h used only by
 * CAP_SCALE_FIXED). AUTO never upscales: when no target has the screen's
 * aspect ratio (within 2%) or the screen is not larger than the target, the
 * screen size is kept.
 */
void cap_scaled_size(enum cap_scale_mode mode, int w, int h, int sw, int sh,
    int *dw, int *dh);

/*
 * Map one coordinate between spaces of sizes `from` and `to` (pixels along
 * that axis). Maps the centre of pixel v: floor((v + 0.5) * to / from), so a
 * point mapped from screenshot to screen and back returns to itself whenever
 * the screenshot is not larger than the screen.
 */
int cap_map(int v, int from, int to);

#endif
