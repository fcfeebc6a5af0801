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
 * same 4 KiB faults as malloc where it has not.
 *
 * Even a huge page is zeroed by the kernel when first touched: 2 MiB of
 * clear_page per page, a fifth of a screenshot's CPU time in a profile
 * once the small faults were gone. So freed blocks wait in a small pool
 * and the next frame reuses them as they are; a reaper thread unmaps what
 * has not been reused for MEM_KEEP_MS, so an idle daemon keeps none (and
 * the thread then sleeps until a block is pooled again).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "capture/capture.h"

#define MEM_HUGE     ((size_t)2 << 20)
#define MEM_HEAD     64           /* keeps the block 64-byte aligned */
#define MEM_MAP_FROM (256u << 10) /* smaller: malloc */

#define MEM_POOL    8    /* blocks kept for reuse */
#define MEM_KEEP_MS 1000 /* unused this long: unmapped */

struct mem_head {
	void *map;     /* NULL: the block came from malloc */
	size_t maplen; /* bytes mapped at map */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a block was pooled */
	struct mem_slot {
		uint8_t *map; /* NULL: empty */
		size_t maplen;
		struct timespec freed; /* CLOCK_MONOTONIC */
	} slot[MEM_POOL];
	int n;
	int reaper; /* started */
} mem = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static int64_t
mem_ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return ((int64_t)(now.tv_sec - t->tv_sec) * 1000 +
	    (now.tv_nsec - t->tv_nsec) / 1000000);
}

/* Unmaps pooled blocks once they are MEM_KEEP_MS old. */
static void *
mem_reap(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mem.lock);
	for (;;) {
		int64_t wait_ms = -1;

		for (int i = 0; i < MEM_POOL; i++) {
			struct mem_slot *sl = &mem.slot[i];
			int64_t age;

			if (sl->map == NULL)
				continue;
			if ((age = mem_ms_since(&sl->freed)) >= MEM_KEEP_MS) {
				munmap(sl->map, sl->maplen);
				sl->map = NULL;
				mem.n--;
			} else if (wait_ms < 0 || MEM_KEEP_MS - age < wait_ms)
				wait_ms = MEM_KEEP_MS - age;
		}
		if (wait_ms < 0)
			pthread_cond_wait(&mem.cond, &mem.lock);
		else {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += (time_t)(wait_ms / 1000);
			ts.tv_nsec += (long)(wait_ms % 1000) * 1000000 +
			    1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&mem.cond, &mem.lock, &ts);
		}
	}
	return (NULL);
}

/* A pooled block of at least len bytes (and not wastefully larger),
 * taken out of the pool; NULL if none. */
static uint8_t *
mem_take(size_t len)
{
	uint8_t *map = NULL;
	int best = -1;

	pthread_mutex_lock(&mem.lock);
	for (int i = 0; i < MEM_POOL; i++) {
		size_t l = mem.slot[i].maplen;

		if (mem.slot[i].map != NULL && l >= len && l <= 2 * len &&
		    (best < 0 || l < mem.slot[best].maplen))
			best = i;
	}
	if (best >= 0) {
		map = mem.slot[best].map;
		mem.slot[best].map = NULL;
		mem.n--;
	}
	pthread_mutex_unlock(&mem.lock);
	return (map);
}

/* Pool a block (0), or -1 when the pool is full. */
static int
mem_give(uint8_t *map, size_t maplen)
{
	int rv = -1;

	pthread_mutex_lock(&mem.lock);
	if (!mem.reaper) {
		pthread_condattr_t ca;
		pthread_attr_t ta;
		pthread_t t;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&mem.cond, &ca);
		pthread_condattr_destroy(&ca);
		pthread_attr_init(&ta);
		pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
		/* small: it only walks the pool */
		pthread_attr_setstacksize(&ta, 64 << 10);
		mem.reaper = pthread_create(&t, &ta, mem_reap, NULL) == 0 ? 1 :
		                                                            -1;
		pthread_attr_destroy(&ta);
	}
	for (int i = 0; i < MEM_POOL && mem.reaper > 0; i++) {
		struct mem_slot *sl = &mem.slot[i];

		if (sl->map != NULL)
			continue;
		sl->map = map;
		sl->maplen = maplen;
		clock_gettime(CLOCK_MONOTONIC, &sl->freed);
		mem.n++;
		pthread_cond_signal(&mem.cond);
		rv = 0;
		break;
	}
	pthread_mutex_unlock(&mem.lock);
	return (rv);
}

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
	/* a pooled block keeps its header from its first use */
	if ((base = mem_take(len)) != NULL)
		return (base + MEM_HEAD);
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
	else if (mem_give(h->map, h->maplen) != 0)
		munmap(h->map, h->maplen);
}
