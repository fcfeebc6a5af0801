/*
 * mem: buffers for whole frames.
 *
 * A fresh anonymous page costs a fault and zeroing when first touched. On
 * the 2-core VMs bureau is measured on (nested paging) that is about 15 us
 * per 4 KiB page: 10 ms to fill the 2.7 MB of one 1280x720 RGB frame, more
 * than scaling and compressing it. glibc hands such sizes out as fresh
 * mmaps (runtime/main.c fixes the threshold at 1 MiB so that the idle
 * daemon gives them back), so every screenshot paid it again. Frame
 * buffers therefore come from mappings aligned to 2 MiB and marked
 * MADV_HUGEPAGE: one fault per 2 MiB (0.15 ms measured) where the kernel
 * has transparent huge pages in "madvise" mode (Debian's default), the
 * same 4 KiB faults as malloc where it has not. They are unmapped on free,
 * so an idle daemon keeps none.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "capture/capture.h"

#define MEM_HUGE     ((size_t)2 << 20)
#define MEM_HEAD     64           /* keeps the block 64-byte aligned */
#define MEM_MAP_FROM (256u << 10) /* smaller: malloc */

struct mem_head {
	void *map;     /* NULL: the block came from malloc */
	size_t maplen; /* bytes mapped at map */
};

void *
cap_alloc(size_t n)
{
	struct mem_head *h;
	uint8_t *map, *base;
	size_t len;

	if (n > SIZE_MAX - MEM_HEAD - 2 * MEM_HUGE)
		return (NULL);
	if (n + MEM_HEAD < MEM_MAP_FROM) {
		if ((h = aligned_alloc(MEM_HEAD,
		         (n + 2 * MEM_HEAD - 1) & ~(size_t)(MEM_HEAD - 1))) ==
		    NULL)
			return (NULL);
		h->map = NULL;
		h->maplen = 0;
		return ((uint8_t *)h + MEM_HEAD);
	}
	/* Room to align the start to 2 MiB; the slack is unmapped. */
	len = (n + MEM_HEAD + MEM_HUGE - 1) & ~(MEM_HUGE - 1);
	map = mmap(NULL, len + MEM_HUGE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return (NULL);
	base = (uint8_t *)(((uintptr_t)map + MEM_HUGE - 1) & ~(MEM_HUGE - 1));
	if (base > map)
		munmap(map, (size_t)(base - map));
	if (base + len < map + len + MEM_HUGE)
		munmap(base + len,
		    (size_t)(map + len + MEM_HUGE - (base + len)));
	madvise(base, len, MADV_HUGEPAGE); /* a hint: fine if refused */
	h = (struct mem_head *)base;
	h->map = base;
	h->maplen = len;
	return (base + MEM_HEAD);
}

void
cap_free(void *p)
{
	struct mem_head *h;

	if (p == NULL)
		return;
	h = (struct mem_head *)((uint8_t *)p - MEM_HEAD);
	if (h->map == NULL)
		free(h);
	else
		munmap(h->map, h->maplen);
}
