/*
 * The PNG encoder with every zlib/libpng knob exposed. Only cap_png_encode
 * (which fixes the knobs, see png.c for why) and the capture benchmark that
 * measured them use it; the rest of bureau calls cap_png_encode.
 */
#ifndef BUREAU_CAPTURE_PNG_TUNE_H
#define BUREAU_CAPTURE_PNG_TUNE_H

#include "capture/capture.h"

/*
 * As cap_png_encode, with filters a mask of libpng's PNG_FILTER_* (or
 * PNG_ALL_FILTERS) and strategy a zlib strategy (Z_DEFAULT_STRATEGY, Z_RLE,
 * Z_FILTERED, ...). *out is malloc'd; the caller frees it.
 */
int cap_png_encode_tuned(const struct cap_image *img, int level, int filters,
    int strategy, uint8_t **out, size_t *outlen, char **cause);

/*
 * The compressor of big images: CAPNG_SDEFLATE (capture/sdeflate.c, the
 * default) or CAPNG_LIBDEFLATE (at the level asked), on threads threads
 * (-1: as many as pay, 2 with 2 CPUs; 0 leaves it). Returns the engine.
 * For tests and capbench; not thread-safe against encoding in progress.
 */
#define CAPNG_SDEFLATE   0
#define CAPNG_LIBDEFLATE 1
int cap_png_engine(int engine, int threads);

#endif
