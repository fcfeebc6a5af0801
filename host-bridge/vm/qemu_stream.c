/*
 * host-bridge/vm/qemu_stream.c: the saved state of a desktop that runs on
 * its warm state's RAM, mapped privately, written as only what it changed.
 *
 * A clone maps the warm RAM file copy-on-write (memory-backend-file,
 * share=off, through a hard link d->dir/ram.base): the pages it never
 * wrote stay the page cache's one copy, shared by every running clone of
 * that warm state. QEMU 7.2 cannot save such a block cheaply: x-ignore-
 * shared skips only shared blocks, so `migrate` reads all of the 4 GB
 * (every hole of the sparse file faulted in) and writes each non-zero
 * page: 4.1-13 s and 319 MB for an idle minimal desktop, measured here.
 * And loading those pages back would copy every one of them into the
 * clone's own memory, shared no more.
 *
 * So a save is put together from three parts, in QEMU's own migration
 * stream format (migration/savevm.c, ram.c of QEMU 7.2), which QEMU then
 * restores with `migrate-incoming` as any state:
 *   - the warm state's beginning (state.base, a hard link to the warm
 *     state file): its header, configuration and RAM sections, which hold
 *     no page of the main RAM (the warm save ignored it as shared) but
 *     the small blocks' pages (firmware, option ROMs, ACPI tables, video
 *     memory);
 *   - one more RAM section of what this desktop changed: the main RAM's
 *     pages that /proc/PID/pagemap shows copied-on-write (anonymous,
 *     present or swapped: 1786 pages, 7 MB, for an idle clone), read from
 *     /proc/PID/mem of the stopped QEMU, and the video memory (pmemsave);
 *   - the devices' state: xen-save-devices-state, which writes the device
 *     sections without any RAM block.
 * Loaded, the pages not in the stream stay the warm file's (shared); the
 * ones in it are copied on write, as they were before the save.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host-bridge/util/util.h"
#include "host-bridge/vm/qemu_int.h"
#include "host-bridge/vm/qmp.h"

/* QEMU 7.2's stream (migration/savevm.c, migration/ram.c). */
#define QEVM_MAGIC     0x5145564dU
#define QEVM_VERSION   3U
#define SEC_EOF        0x00
#define SEC_START      0x01
#define SEC_PART       0x02
#define SEC_END        0x03
#define SEC_FULL       0x04
#define SEC_SUBSECTION 0x05
#define SEC_VMDESC     0x06
#define SEC_CONFIG     0x07
#define SEC_FOOTER     0x7e
#define RAM_ZERO       0x02
#define RAM_MEM_SIZE   0x04
#define RAM_PAGE       0x08
#define RAM_EOS        0x10
#define RAM_CONTINUE   0x20
#define RAM_FLAGS      0xfffULL
#define PAGE           4096

/* A read-only view of a stream file. */
struct rd {
	const unsigned char *p;
	size_t n, at;
	int bad;
};

static unsigned
rd_u8(struct rd *r)
{
	if (r->at + 1 > r->n) {
		r->bad = 1;
		return (0);
	}
	return (r->p[r->at++]);
}

static uint32_t
rd_be32(struct rd *r)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v = v << 8 | rd_u8(r);
	return (v);
}

static uint64_t
rd_be64(struct rd *r)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | rd_u8(r);
	return (v);
}

/* A length-prefixed (one byte) name into buf (NUL-terminated). */
static void
rd_name(struct rd *r, char buf[256])
{
	unsigned l = rd_u8(r);

	if (r->bad || r->at + l > r->n) {
		r->bad = 1;
		buf[0] = '\0';
		return;
	}
	memcpy(buf, r->p + r->at, l);
	buf[l] = '\0';
	r->at += l;
}

static void
rd_skip(struct rd *r, size_t n)
{
	if (r->at + n > r->n)
		r->bad = 1;
	else
		r->at += n;
}

/* What the warm state's beginning says. */
struct base_info {
	size_t prefix;    /* bytes up to its first device section */
	uint32_t ram_sid; /* the RAM section's id */
	char mem[256];    /* the main RAM's block */
	uint64_t mem_len;
	char vram[256]; /* the video memory's block ("" if none) */
	uint64_t vram_len;
};

/* The configuration section's subsections (savevm.c's
 * vmstate_configuration): 0 when r stands after them. */
static int
parse_config(struct rd *r, char **cause)
{
	char name[256];

	rd_skip(r, rd_be32(r)); /* the machine type's name */
	while (!r->bad && r->at < r->n && r->p[r->at] == SEC_SUBSECTION) {
		r->at++;
		rd_name(r, name);
		rd_be32(r); /* version */
		if (strcmp(name, "configuration/capabilities") == 0) {
			uint32_t n = rd_be32(r);
			for (uint32_t i = 0; i < n && !r->bad; i++)
				rd_skip(r, rd_u8(r));
		} else if (strcmp(name, "configuration/target-page-bits") ==
		    0) {
			rd_be32(r);
		} else if (strcmp(name, "configuration/uuid") == 0) {
			rd_skip(r, 16);
		} else {
			*cause = hb_fmt("the warm state's configuration has "
			                "a part this bureau does not know "
			                "('%s')",
			    name);
			return (-1);
		}
	}
	return (0);
}

/* One RAM section's entries up to its end (EOS). */
static int
parse_ram_entries(struct rd *r, struct base_info *bi, char **cause)
{
	char name[256];

	while (!r->bad) {
		uint64_t a = rd_be64(r), fl = a & RAM_FLAGS;

		if (fl & RAM_EOS)
			return (0);
		if (fl & RAM_MEM_SIZE) {
			uint64_t total = a & ~RAM_FLAGS, sum = 0;
			while (sum < total && !r->bad) {
				uint64_t len;
				rd_name(r, name);
				len = rd_be64(r);
				rd_be64(r); /* its address (x-ignore-shared) */
				sum += len;
				if (strcmp(name, "mem") == 0) {
					snprintf(bi->mem, sizeof bi->mem, "%s",
					    name);
					bi->mem_len = len;
				} else if (strlen(name) >= 9 &&
				    strcmp(name + strlen(name) - 9,
				        "/vga.vram") == 0) {
					snprintf(bi->vram, sizeof bi->vram,
					    "%s", name);
					bi->vram_len = len;
				}
			}
			if (sum != total)
				r->bad = 1;
			continue;
		}
		if (!(fl & (RAM_ZERO | RAM_PAGE)) ||
		    (fl & ~(uint64_t)(RAM_ZERO | RAM_PAGE | RAM_CONTINUE))) {
			*cause = hb_fmt("the warm state's RAM holds an entry "
			                "this bureau does not read (flags "
			                "%#" PRIx64 ")",
			    fl);
			return (-1);
		}
		if (!(fl & RAM_CONTINUE))
			rd_name(r, name);
		rd_skip(r, (fl & RAM_ZERO) ? 1 : PAGE);
	}
	return (0);
}

static int
parse_footer(struct rd *r, uint32_t sid)
{
	if (rd_u8(r) != SEC_FOOTER || rd_be32(r) != sid)
		r->bad = 1;
	return (r->bad ? -1 : 0);
}

/* Read the warm state's header, configuration and RAM sections. */
static int
parse_base(struct rd *r, struct base_info *bi, char **cause)
{
	char name[256];
	int seen = 0;

	memset(bi, 0, sizeof *bi);
	if (rd_be32(r) != QEVM_MAGIC || rd_be32(r) != QEVM_VERSION ||
	    rd_u8(r) != SEC_CONFIG) {
		*cause = hb_fmt("the warm state is not a QEMU state this "
		                "bureau reads");
		return (-1);
	}
	if (parse_config(r, cause) != 0)
		return (-1);
	while (!r->bad) {
		size_t at = r->at;
		unsigned t = rd_u8(r);
		uint32_t sid = rd_be32(r);

		if (t == SEC_START) {
			rd_name(r, name);
			rd_be32(r); /* instance */
			rd_be32(r); /* version */
			if (strcmp(name, "ram") != 0 || seen) {
				*cause = hb_fmt("the warm state has a live "
				                "section '%s' this bureau does "
				                "not read",
				    name);
				return (-1);
			}
			seen = 1;
			bi->ram_sid = sid;
		} else if (t == SEC_PART || t == SEC_END) {
			if (!seen || sid != bi->ram_sid) {
				*cause = hb_fmt("the warm state has a live "
				                "section this bureau does not "
				                "read");
				return (-1);
			}
		} else if (t == SEC_FULL && seen) {
			bi->prefix = at;
			break;
		} else {
			r->bad = 1;
			break;
		}
		if (parse_ram_entries(r, bi, cause) != 0)
			return (-1);
		parse_footer(r, sid);
	}
	if (r->bad || bi->mem_len == 0) {
		*cause = hb_fmt("the warm state is cut short or not a QEMU "
		                "state this bureau reads");
		return (-1);
	}
	return (0);
}

/* ---- writing ---------------------------------------------------------- */

struct wr {
	FILE *f;
	const char *last; /* the block the last page entry named */
};

static void
put_be32(FILE *f, uint32_t v)
{
	unsigned char b[4] = { v >> 24, v >> 16, v >> 8, v };

	fwrite(b, 1, 4, f);
}

static void
put_be64(FILE *f, uint64_t v)
{
	put_be32(f, (uint32_t)(v >> 32));
	put_be32(f, (uint32_t)v);
}

static int
all_zero(const unsigned char *p)
{
	static const unsigned char z[PAGE];

	return (memcmp(p, z, PAGE) == 0);
}

/* One page of block at offset: a zero entry or the page. */
static void
put_page(struct wr *w, const char *block, uint64_t off, const unsigned char *p)
{
	int zero = all_zero(p);
	uint64_t fl = zero ? RAM_ZERO : RAM_PAGE;

	if (w->last == block)
		fl |= RAM_CONTINUE;
	put_be64(w->f, off | fl);
	if (w->last != block) {
		size_t l = strlen(block);
		fputc((int)l, w->f);
		fwrite(block, 1, l, w->f);
		w->last = block;
	}
	if (zero)
		fputc(0, w->f);
	else
		fwrite(p, 1, PAGE, w->f);
}

/* The video memory as QEMU's pmemsave wrote it (its BAR): all pages. */
static int
put_vram(struct wr *w, const struct base_info *bi, const char *path,
    char **cause)
{
	unsigned char buf[PAGE];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t off = 0;

	if (fd < 0) {
		*cause = hb_fmt("cannot read the video memory: %s",
		    strerror(errno));
		return (-1);
	}
	while (off < bi->vram_len) {
		ssize_t n = pread(fd, buf, PAGE, (off_t)off);
		if (n != PAGE)
			break;
		put_page(w, bi->vram, off, buf);
		off += PAGE;
	}
	close(fd);
	if (off != bi->vram_len) {
		*cause = hb_fmt("the video memory file is short");
		return (-1);
	}
	return (0);
}

/* Where QEMU maps the RAM file (by inode): its address. */
static int
find_mapping(pid_t pid, const char *ram, uint64_t len, uintptr_t *addr,
    char **cause)
{
	char line[1024], *p = hb_fmt("/proc/%d/maps", (int)pid);
	struct stat st;
	FILE *f = p ? fopen(p, "re") : NULL;
	int rv = -1;

	free(p);
	if (f == NULL || stat(ram, &st) != 0) {
		*cause = hb_fmt("cannot read QEMU's mappings: %s",
		    strerror(errno));
		goto out;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned long long lo, hi, off, ino;
		char perm[8], dev[16];
		if (sscanf(line, "%llx-%llx %7s %llx %15s %llu", &lo, &hi, perm,
		        &off, dev, &ino) == 6 &&
		    ino == (unsigned long long)st.st_ino && off == 0 &&
		    hi - lo == len && perm[3] == 'p') {
			*addr = (uintptr_t)lo;
			rv = 0;
			break;
		}
	}
	if (rv != 0)
		*cause = hb_fmt("QEMU does not map '%s' privately", ram);
out:
	if (f != NULL)
		fclose(f);
	return (rv);
}

/*
 * The main RAM's pages that QEMU copied on write: pagemap's bit 63
 * (present) without bit 61 (a file page), or bit 62 (swapped: only
 * anonymous pages are). Read from the stopped QEMU's memory.
 */
static int
put_changed(struct wr *w, const struct base_info *bi, pid_t pid,
    const char *ram, size_t *pages, char **cause)
{
	enum { CHUNK = 8192 };
	uint64_t *pm = malloc(CHUNK * sizeof *pm);
	unsigned char *buf = malloc(PAGE);
	char *pp = hb_fmt("/proc/%d/pagemap", (int)pid);
	char *mp = hb_fmt("/proc/%d/mem", (int)pid);
	uint64_t npages = bi->mem_len / PAGE;
	uintptr_t base;
	int pfd = -1, mfd = -1, rv = -1;

	*pages = 0;
	if (pm == NULL || buf == NULL || pp == NULL || mp == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (find_mapping(pid, ram, bi->mem_len, &base, cause) != 0)
		goto out;
	if ((pfd = open(pp, O_RDONLY | O_CLOEXEC)) < 0 ||
	    (mfd = open(mp, O_RDONLY | O_CLOEXEC)) < 0) {
		*cause = hb_fmt("cannot read QEMU's memory (%s): %s", mp,
		    strerror(errno));
		goto out;
	}
	for (uint64_t i = 0; i < npages; i += CHUNK) {
		uint64_t n = npages - i < CHUNK ? npages - i : CHUNK;
		ssize_t got = pread(pfd, pm, n * sizeof *pm,
		    (off_t)((base / PAGE + i) * sizeof *pm));
		if (got != (ssize_t)(n * sizeof *pm)) {
			*cause = hb_fmt("cannot read QEMU's page map: %s",
			    got < 0 ? strerror(errno) : "short read");
			goto out;
		}
		for (uint64_t k = 0; k < n; k++) {
			uint64_t e = pm[k];
			int present = (int)(e >> 63 & 1),
			    swapped = (int)(e >> 62 & 1),
			    file = (int)(e >> 61 & 1);
			if (!((present && !file) || swapped))
				continue;
			if (pread(mfd, buf, PAGE,
			        (off_t)(base + (i + k) * PAGE)) != PAGE) {
				*cause = hb_fmt("cannot read QEMU's memory: "
				                "%s",
				    strerror(errno));
				goto out;
			}
			put_page(w, bi->mem, (i + k) * PAGE, buf);
			(*pages)++;
		}
	}
	rv = 0;
out:
	if (pfd >= 0)
		close(pfd);
	if (mfd >= 0)
		close(mfd);
	free(pm);
	free(buf);
	free(pp);
	free(mp);
	return (rv);
}

/* The device sections of xen-save-devices-state's file (its header and
 * end marker dropped). */
static int
put_devices(FILE *out, const char *path, char **cause)
{
	size_t n = 0;
	struct rd r;
	int rv = -1, fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	void *m = MAP_FAILED;

	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 9 ||
	    (m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
	         0)) == MAP_FAILED) {
		*cause = hb_fmt("cannot read the devices' state: %s",
		    fd < 0 ? strerror(errno) : "empty");
		goto out;
	}
	n = (size_t)st.st_size;
	r = (struct rd){ m, n, 0, 0 };
	if (rd_be32(&r) != QEVM_MAGIC || rd_be32(&r) != QEVM_VERSION ||
	    r.p[8] != SEC_FULL || r.p[n - 1] != SEC_EOF) {
		*cause = hb_fmt("QEMU's device state is not in the form "
		                "this bureau reads");
		goto out;
	}
	fwrite(r.p + 8, 1, n - 9, out);
	rv = 0;
out:
	if (m != MAP_FAILED)
		munmap(m, n);
	if (fd >= 0)
		close(fd);
	return (rv);
}

/* The video memory's BAR (a VGA controller's region 0) from query-pci:
 * its guest address, or -1 when the guest has not mapped it. */
static long long
vram_bar(struct qmp *q, uint64_t len)
{
	json_t *r = NULL, *bus, *dev, *reg;
	size_t i, k, m;
	long long at = -1;
	char *c = NULL;

	if (qmp_exec(q, "query-pci", NULL, &r, &c) != 0) {
		free(c);
		return (-1);
	}
	json_array_foreach(r, i, bus)
	{
		json_array_foreach(json_object_get(bus, "devices"), k, dev)
		{
			json_t *ci = json_object_get(dev, "class_info");
			if (json_integer_value(json_object_get(ci, "class")) !=
			    0x0300)
				continue;
			json_array_foreach(json_object_get(dev, "regions"), m,
			    reg)
			{
				if (json_integer_value(
				        json_object_get(reg, "bar")) == 0 &&
				    (uint64_t)json_integer_value(
				        json_object_get(reg, "size")) == len)
					at = json_integer_value(
					    json_object_get(reg, "address"));
			}
		}
	}
	json_decref(r);
	return (at);
}

int
qemu_stream_save(const struct desktop *d, struct qmp *q, pid_t pid,
    const char *out, size_t *changed, char **cause)
{
	char *base = desktop_path(d, "state.base"),
	     *ram = desktop_path(d, "ram.base");
	char *dev = desktop_path(d, "state.dev.tmp"),
	     *vram = desktop_path(d, "state.vram.tmp");
	struct base_info bi;
	struct rd r = { 0 };
	struct wr w = { 0 };
	struct stat st;
	void *m = MAP_FAILED;
	int fd = -1, ofd = -1, rv = -1, have_vram = 0;
	long long bar;
	static const char vmdesc[] = "{\"page_size\": 4096, \"devices\": []}";

	if (base == NULL || ram == NULL || dev == NULL || vram == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if ((fd = open(base, O_RDONLY | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) != 0 ||
	    (m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
	         0)) == MAP_FAILED) {
		*cause = hb_fmt("cannot read '%s': %s", base, strerror(errno));
		goto out;
	}
	r = (struct rd){ m, (size_t)st.st_size, 0, 0 };
	if (parse_base(&r, &bi, cause) != 0)
		goto out;
	unlink(dev);
	unlink(vram);
	/* live=false: the disks stay active, so that a failed save can
	 * let the desktop run on (cont). */
	if (qmp_exec(q, "xen-save-devices-state",
	        json_pack("{s:s, s:b}", "filename", dev, "live", 0), NULL,
	        cause) != 0)
		goto out;
	if (bi.vram_len > 0 && (bar = vram_bar(q, bi.vram_len)) >= 0) {
		if (qmp_exec(q, "pmemsave",
		        json_pack("{s:I, s:I, s:s}", "val", (json_int_t)bar,
		            "size", (json_int_t)bi.vram_len, "filename", vram),
		        NULL, cause) != 0)
			goto out;
		have_vram = 1;
	}
	if ((ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) <
	        0 ||
	    (w.f = fdopen(ofd, "w")) == NULL) {
		if (ofd >= 0)
			close(ofd);
		*cause = hb_fmt("cannot write '%s': %s", out, strerror(errno));
		goto out;
	}
	setvbuf(w.f, NULL, _IOFBF, 1 << 20);
	fwrite(r.p, 1, bi.prefix, w.f);
	/* This desktop's own pages, a RAM section of their own. */
	fputc(SEC_PART, w.f);
	put_be32(w.f, bi.ram_sid);
	if (have_vram && put_vram(&w, &bi, vram, cause) != 0)
		goto out;
	if (put_changed(&w, &bi, pid, ram, changed, cause) != 0)
		goto out;
	put_be64(w.f, RAM_EOS);
	fputc(SEC_FOOTER, w.f);
	put_be32(w.f, bi.ram_sid);
	if (put_devices(w.f, dev, cause) != 0)
		goto out;
	fputc(SEC_EOF, w.f);
	/* (the loader reads a description after the end, and drops it) */
	fputc(SEC_VMDESC, w.f);
	put_be32(w.f, sizeof vmdesc - 1);
	fwrite(vmdesc, 1, sizeof vmdesc - 1, w.f);
	if (fflush(w.f) != 0 || ferror(w.f)) {
		*cause = hb_fmt("cannot write '%s': %s", out, strerror(errno));
		goto out;
	}
	rv = 0;
out:
	if (w.f != NULL && fclose(w.f) != 0 && rv == 0) {
		*cause = hb_fmt("cannot write '%s': %s", out, strerror(errno));
		rv = -1;
	}
	if (m != MAP_FAILED)
		munmap(m, (size_t)st.st_size);
	if (fd >= 0)
		close(fd);
	if (dev != NULL)
		unlink(dev);
	if (vram != NULL)
		unlink(vram);
	free(base);
	free(ram);
	free(dev);
	free(vram);
	return (rv);
}
