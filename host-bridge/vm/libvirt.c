/*
 * host-bridge/vm/libvirt.c: the libvirt backend (DESIGN.md, "Hosts:
 * desktops on libvirt"). A desktop whose host is not `local` runs as a
 * transient libvirt domain named bureau-NAME, through libvirt's C API on
 * the host's URI (store/hosts.c); the host agent runs beside it, on the
 * host where the VM runs, so its files are local files there.
 *
 * What stays bureau's, as on `local`: the disks (disks.c: an overlay on
 * the image's base and the home disk), the identity through fw_cfg, the
 * guest's network (netkeeper.c: the desktop's own namespace, its rules and
 * the relay to the guest's daemon), the RAM file and the saved state (a
 * save writes the devices' state alone, as on `local`: lv_save). What is
 * libvirt's: running QEMU, pausing, ending it, its figures.
 *
 * QEMU runs as libvirt's QEMU user (libvirt-qemu on Debian), named in the
 * domain's static DAC label with relabel='no', so that libvirt changes
 * the owner of no file (the image's base is shared by every desktop). The
 * desktop's directory stays 0700; POSIX ACLs give that user alone what
 * QEMU opens: passage through the directory, the two disks, the fw_cfg
 * files, the RAM file, and lv/, a directory of its own where QEMU makes
 * its VNC and QMP sockets and listens for the guest's network link. The keeper
 * connects there and hands the connection to passt (Debian 12's libvirt refuses
 * passt's own backend: "Invalid value for attribute 'type' in element
 * 'backend'"), so the netdev is given on QEMU's command line
 * (<qemu:commandline>; libvirt marks such a domain tainted, "custom-argv").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <grp.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/acl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include <jansson.h>

#include "host-bridge/util/util.h"
#include "host-bridge/vm/limits.h"
#include "host-bridge/vm/disks.h"
#include "host-bridge/vm/qemu_int.h"
#include "host-bridge/vm/qmp.h"
#include "host-bridge/vm/vm.h"

/* libvirt's QEMU user: the qemu driver's default on Debian. */
#define LV_USER_DEFAULT "libvirt-qemu"
/* How long QEMU may take to listen for the guest's link after libvirt
 * says the domain runs (the wait before that is libvirt's). */
#define LV_LINK_WAIT_MS 15000

static int lv_saved(const struct desktop *d);
static void lv_discard(const struct desktop *d);

static void
lv_quiet(void *arg, virErrorPtr err)
{
	(void)arg;
	(void)err; /* errors are read with virGetLastErrorMessage */
}

/* The connection to d's host; NULL with *cause. */
static virConnectPtr
lv_conn(const struct desktop *d, char **cause)
{
	virConnectPtr c;
	char *uri = NULL;

	virSetErrorFunc(NULL, lv_quiet);
	if (host_uri(d->host, &uri, cause) != 0)
		return (NULL);
	if (uri == NULL) {
		*cause = hb_fmt("desktop '%s' runs on the local host, not on "
		                "libvirt",
		    d->name);
		return (NULL);
	}
	if ((c = virConnectOpen(uri)) == NULL)
		*cause = hb_fmt("cannot reach host '%s' (%s): %s", d->host, uri,
		    virGetLastErrorMessage());
	free(uri);
	return (c);
}

static char *
lv_domname(const struct desktop *d)
{
	return (hb_fmt("bureau-%s", d->name));
}

/* d's domain (running, since it is transient), NULL when none; *c the
 * connection (the caller closes it), NULL with *cause when unreachable. */
static virDomainPtr
lv_dom(const struct desktop *d, virConnectPtr *c, char **cause)
{
	char *n = lv_domname(d);
	virDomainPtr dom = NULL;

	if ((*c = lv_conn(d, cause)) != NULL && n != NULL)
		dom = virDomainLookupByName(*c, n);
	free(n);
	return (dom);
}

static void
lv_close(virConnectPtr c, virDomainPtr dom)
{
	if (dom != NULL)
		virDomainFree(dom);
	if (c != NULL)
		virConnectClose(c);
}

/* libvirt's QEMU user ($BUREAU_LIBVIRT_USER, default libvirt-qemu). */
static int
lv_user(uid_t *uid, gid_t *gid, char **cause)
{
	const char *u = getenv("BUREAU_LIBVIRT_USER");
	struct passwd *pw;

	if (u == NULL || *u == '\0')
		u = LV_USER_DEFAULT;
	if ((pw = getpwnam(u)) == NULL) {
		*cause = hb_fmt("libvirt's QEMU user '%s' is not on this host "
		                "(libvirt-daemon-system makes it; "
		                "BUREAU_LIBVIRT_USER names another)",
		    u);
		return (-1);
	}
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return (0);
}

/*
 * Give uid perm ("r--", "rw-", "--x") on path through its access ACL,
 * beside what is there (the owner's, group's and others' bits and any
 * other entry stay; the mask is made anew to let them all through).
 * libvirt's QEMU user then opens what it must and nothing else.
 * Written with libacl (Debian's, as coreutils uses it) rather than the
 * xattr's binary format by hand.
 */
static int
lv_acl(const char *path, uid_t uid, const char *perm, char **cause)
{
	acl_t acl = acl_get_file(path, ACL_TYPE_ACCESS);
	acl_entry_t e = NULL;
	acl_permset_t ps;
	int r, found = 0, rv = -1;

	if (acl == NULL)
		goto fail;
	for (r = acl_get_entry(acl, ACL_FIRST_ENTRY, &e); r == 1 && !found;
	     r = acl_get_entry(acl, ACL_NEXT_ENTRY, &e)) {
		acl_tag_t t;
		uid_t *q;

		if (acl_get_tag_type(e, &t) == 0 && t == ACL_USER &&
		    (q = acl_get_qualifier(e)) != NULL) {
			found = *q == uid;
			acl_free(q);
		}
		if (found)
			break;
	}
	if (!found &&
	    (acl_create_entry(&acl, &e) != 0 ||
	        acl_set_tag_type(e, ACL_USER) != 0 ||
	        acl_set_qualifier(e, &uid) != 0))
		goto fail;
	if (acl_get_permset(e, &ps) != 0 || acl_clear_perms(ps) != 0 ||
	    (perm[0] == 'r' && acl_add_perm(ps, ACL_READ) != 0) ||
	    (perm[1] == 'w' && acl_add_perm(ps, ACL_WRITE) != 0) ||
	    (perm[2] == 'x' && acl_add_perm(ps, ACL_EXECUTE) != 0) ||
	    acl_set_permset(e, ps) != 0 || acl_calc_mask(&acl) != 0 ||
	    acl_set_file(path, ACL_TYPE_ACCESS, acl) != 0)
		goto fail;
	rv = 0;
	goto out;
fail:
	*cause = hb_fmt("cannot give libvirt's QEMU user access to '%s' (an "
	                "ACL): %s",
	    path, strerror(errno));
out:
	if (acl != NULL)
		acl_free(acl);
	return (rv);
}

/* Passage (search) for uid through every directory above dir that others
 * may not search: a home of 0700 (root's ~/.local/share/bureau, a mktemp
 * directory) would keep QEMU out. As virt-manager offers to, through an
 * ACL entry that lets uid pass, not list. */
static int
lv_ancestors(const char *dir, uid_t uid, char **cause)
{
	char *p = strdup(dir), *slash;
	struct stat sb;
	int rv = 0;

	if (p == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	while (rv == 0 && (slash = strrchr(p, '/')) != NULL && slash != p) {
		*slash = '\0';
		if (stat(p, &sb) == 0 && !(sb.st_mode & S_IXOTH) &&
		    sb.st_uid != uid)
			rv = lv_acl(p, uid, "--x", cause);
	}
	free(p);
	return (rv);
}

/* What QEMU, as libvirt's user, opens in d's directory (see the top). */
static int
lv_grant(const struct desktop *d, char **cause)
{
	static const char *const rw[] = { "system.qcow2", "home.qcow2", "ram" };
	static const char *const ro[] = { "guest-token", "hostname",
		"machine-id" };
	char *lv = desktop_path(d, "lv"), *p;
	DIR *dir;
	struct dirent *e;
	uid_t uid;
	gid_t gid;
	int rv = -1;

	if (lv == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	if (lv_user(&uid, &gid, cause) != 0 ||
	    lv_ancestors(d->dir, uid, cause) != 0 ||
	    lv_acl(d->dir, uid, "--x", cause) != 0)
		goto out;
	if (mkdir(lv, 0700) != 0 && errno != EEXIST) {
		*cause = hb_fmt("cannot create '%s': %s", lv, strerror(errno));
		goto out;
	}
	if (chown(lv, uid, gid) != 0) {
		*cause = hb_fmt("cannot chown '%s': %s", lv, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < 6; i++) {
		const char *f = i < 3 ? rw[i] : ro[i - 3];

		if ((p = desktop_path(d, f)) == NULL) {
			*cause = hb_fmt("out of memory");
			goto out;
		}
		if (access(p, F_OK) == 0 &&
		    lv_acl(p, uid, i < 3 ? "rw-" : "r--", cause) != 0) {
			free(p);
			goto out;
		}
		free(p);
	}
	/* the read-only layers a fork left under the disks */
	if ((dir = opendir(d->dir)) == NULL) {
		*cause = hb_fmt("cannot read '%s': %s", d->dir,
		    strerror(errno));
		goto out;
	}
	while ((e = readdir(dir)) != NULL) {
		if (!qemu_layer_name(e->d_name))
			continue;
		if ((p = desktop_path(d, e->d_name)) == NULL ||
		    lv_acl(p, uid, "r--", cause) != 0) {
			if (p == NULL)
				*cause = hb_fmt("out of memory");
			free(p);
			closedir(dir);
			goto out;
		}
		free(p);
	}
	closedir(dir);
	rv = 0;
out:
	free(lv);
	return (rv);
}

/* A file a fork makes, for libvirt's QEMU user (qemu_fork.c). */
static int
lv_grant_file(const struct desktop *d, const char *path, const char *perm,
    char **cause)
{
	uid_t uid;
	gid_t gid;

	(void)d;
	return (lv_user(&uid, &gid, cause) != 0 ?
	        -1 :
	        lv_acl(path, uid, perm, cause));
}

/* s escaped for an XML attribute or text (malloc'd). */
static char *
lv_esc(const char *s)
{
	size_t n = 1;
	char *o, *q;

	for (const char *p = s; *p; p++)
		n += strchr("&<>'\"", *p) ? 6 : 1;
	if ((o = q = malloc(n)) == NULL)
		return (NULL);
	for (const char *p = s; *p; p++) {
		const char *e = *p == '&' ? "&amp;" :
		    *p == '<'             ? "&lt;" :
		    *p == '>'             ? "&gt;" :
		    *p == '\''            ? "&apos;" :
		    *p == '"'             ? "&quot;" :
		                            NULL;
		if (e != NULL) {
			strcpy(q, e);
			q += strlen(e);
		} else
			*q++ = *p;
	}
	*q = '\0';
	return (o);
}

/* d's file name as an argument on QEMU's command line in the XML (commas
 * doubled, then escaped for XML; malloc'd). */
static char *
lv_arg_path(const struct desktop *d, const char *name)
{
	char *p = desktop_path(d, name), *e = p ? hb_qemu_escape(p) : NULL,
	     *x = e ? lv_esc(e) : NULL;

	free(p);
	free(e);
	return (x);
}

/*
 * The domain: the machine, CPUs and memory as on `local` (QEMU_MACHINE;
 * the CPU model `maximum` under TCG, the host's under KVM; TCG's
 * translation cache capped at 256 MB), direct kernel boot from the image, the
 * two disks, the console to console.log, VNC on lv/vnc.sock, a tablet for the
 * live view, the RNG, the identity through fw_cfg, the guest's network
 * link listening on lv/net.sock, the RAM in d's file `ram` (mapped shared:
 * a save leaves it there; the machine's memory-backend given again on the
 * command line overrides libvirt's, which stays unused), a QMP monitor of
 * bureau's on lv/qmp.sock (lv_save), -incoming defer for a restore, and a
 * generation id that QEMU makes anew
 * at each start, a restore's too: the restored guest then re-reads its
 * identity (its new token) from fw_cfg, as on `local`. (libvirt's own
 * <genid/> refuses a restore whose id differs from the saved one: "Target
 * domain genid ... does not match source".) libvirt reads the guest
 * CPU's features back over QMP at every start and restore (800 qom-get
 * under TCG, 0.7 s of a 2.7 s restore in its debug log), whatever the
 * model: it adds qemu64 where the XML names none.
 * A saved state holds these devices: a change to them takes a new
 * VM_WARM_LIBVIRT number (vm.h), so that no warm state of the old devices
 * is cloned.
 */
/* The desktop's limits (vm/limits.h) as libvirt takes them: the CPU
 * quota of all its vCPUs together, and its disks' throttling in one
 * group, as the QEMU backend's (malloc'd, "" when none). libvirt puts
 * the domain in a cgroup of its own. */
static char *
lv_tune(const struct desktop *d)
{
	if (d->cpu_milli <= 0)
		return (strdup(""));
	return (hb_fmt("  <cputune><global_period>%d</global_period>"
	               "<global_quota>%ld</global_quota></cputune>\n",
	    LIMITS_CPU_PERIOD_US,
	    d->cpu_milli * (LIMITS_CPU_PERIOD_US / 1000)));
}

static char *
lv_iotune(const struct desktop *d)
{
	char b[64] = "", o[64] = "";

	if (d->disk_bps <= 0 && d->disk_iops <= 0)
		return (strdup(""));
	if (d->disk_bps > 0)
		snprintf(b, sizeof b, "<total_bytes_sec>%lld</total_bytes_sec>",
		    d->disk_bps);
	if (d->disk_iops > 0)
		snprintf(o, sizeof o, "<total_iops_sec>%ld</total_iops_sec>",
		    d->disk_iops);
	return (hb_fmt("      <iotune>%s%s<group_name>disks</group_name>"
	               "</iotune>\n",
	    b, o));
}

static char *
lv_xml(const struct desktop *d, const struct image *im, const char *accel,
    int incoming, char **cause)
{
	char *nq = NULL, *net = NULL, *ram = lv_arg_path(d, "ram"),
	     *qmp = lv_arg_path(d, "lv/qmp.sock");
	char *dir = lv_esc(d->dir), *img = lv_esc(d->image), *kern = NULL,
	     *initrd = NULL, *cmd = lv_esc(im->cmdline), *name = lv_domname(d),
	     *x = NULL, *tune = NULL, *io = NULL;
	uid_t uid;
	gid_t gid;
	int kvm = strcmp(accel, "kvm") == 0, mid;

	if (lv_user(&uid, &gid, cause) != 0)
		goto out;
	if ((tune = lv_tune(d)) == NULL || (io = lv_iotune(d)) == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	kern = lv_esc(im->kernel);
	/* (a qemu:arg is QEMU's: commas doubled, then escaped for XML) */
	if ((nq = hb_fmt("%s/lv/net.sock", d->dir)) != NULL &&
	    (net = hb_qemu_escape(nq)) != NULL) {
		free(nq);
		nq = lv_esc(net);
	}
	initrd = lv_esc(im->initrd);
	if (dir == NULL || img == NULL || kern == NULL || initrd == NULL ||
	    cmd == NULL || name == NULL || net == NULL || nq == NULL ||
	    ram == NULL || qmp == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	{
		char *m = desktop_path(d, "machine-id");
		mid = m != NULL && access(m, R_OK) == 0;
		free(m);
	}
	x = hb_fmt(
	    "<domain type='%s' "
	    "xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>\n"
	    "  <name>%s</name>\n"
	    "  <memory unit='MiB'>%ld</memory>\n"
	    "  <vcpu>%d</vcpu>\n"
	    "%s"
	    "  <os>\n"
	    "    <type arch='x86_64' machine='" QEMU_MACHINE "'>hvm</type>\n"
	    "    <kernel>%s/%s</kernel>\n"
	    "    <initrd>%s/%s</initrd>\n"
	    "    <cmdline>%s</cmdline>\n"
	    "  </os>\n"
	    "  <features><acpi/>%s</features>\n"
	    "  <cpu mode='%s' check='none'/>\n"
	    "  <clock offset='utc'/>\n"
	    "  <on_poweroff>destroy</on_poweroff>\n"
	    "  <on_reboot>restart</on_reboot>\n"
	    "  <on_crash>destroy</on_crash>\n"
	    "  <sysinfo type='fwcfg'>\n"
	    "    <entry name='opt/bureau/hostname' file='%s/hostname'/>\n"
	    "%s%s%s"
	    "    <entry name='opt/bureau/token' file='%s/guest-token'/>\n"
	    "  </sysinfo>\n"
	    "  <devices>\n"
	    "    <disk type='file' device='disk'>\n"
	    "      <driver name='qemu' type='qcow2' discard='unmap'/>\n"
	    "      <source file='%s/system.qcow2'/>\n"
	    "      <target dev='vda' bus='virtio'/>\n"
	    "%s"
	    "    </disk>\n"
	    "    <disk type='file' device='disk'>\n"
	    "      <driver name='qemu' type='qcow2' discard='unmap'/>\n"
	    "      <source file='%s/home.qcow2'/>\n"
	    "      <target dev='vdb' bus='virtio'/>\n"
	    "%s"
	    "    </disk>\n"
	    "    <controller type='usb' model='qemu-xhci'/>\n"
	    "    <input type='tablet' bus='usb'/>\n"
	    "    <graphics type='vnc' socket='%s/lv/vnc.sock'/>\n"
	    "    <video><model type='vga'/></video>\n"
	    "    <serial type='file'>\n"
	    "      <source path='%s/console.log'/>\n"
	    "      <target port='0'/>\n"
	    "    </serial>\n"
	    "    <console type='file'>\n"
	    "      <source path='%s/console.log'/>\n"
	    "      <target type='serial' port='0'/>\n"
	    "    </console>\n"
	    "    <rng model='virtio'><backend "
	    "model='random'>/dev/urandom</backend></rng>\n"
	    "    <memballoon model='none'/>\n"
	    "  </devices>\n"
	    "  <seclabel type='static' model='dac' relabel='no'>\n"
	    "    <label>+%u:+%u</label>\n"
	    "  </seclabel>\n"
	    "  <qemu:commandline>\n"
	    "    <qemu:arg value='-netdev'/>\n"
	    "    <qemu:arg value='stream,id=net0,server=on,addr.type=unix,"
	    "addr.path=%s'/>\n"
	    "    <qemu:arg value='-device'/>\n"
	    "    <qemu:arg value='virtio-net-pci,netdev=net0,bus=pcie.0,"
	    "addr=0x10'/>\n"
	    "    <qemu:arg value='-device'/>\n"
	    "    <qemu:arg value='vmgenid,guid=auto'/>\n"
	    "    <qemu:arg value='-machine'/>\n"
	    "    <qemu:arg value='memory-backend=bureau-ram'/>\n"
	    "    <qemu:arg value='-object'/>\n"
	    "    <qemu:arg value='memory-backend-file,id=bureau-ram,"
	    "size=%ldM,mem-path=%s,share=on'/>\n"
	    "    <qemu:arg value='-qmp'/>\n"
	    "    <qemu:arg value='unix:%s,server=on,wait=off'/>\n"
	    "%s"
	    "  </qemu:commandline>\n"
	    "</domain>\n",
	    kvm ? "kvm" : "qemu", name, d->memory, d->cpus, tune, img, kern,
	    img, initrd, cmd,
	    kvm ? "" : "<tcg><tb-cache unit='MiB'>256</tb-cache></tcg>",
	    kvm ? "host-passthrough" : "maximum", dir,
	    mid ? "    <entry name='opt/bureau/machine-id' file='" : "",
	    mid ? dir : "", mid ? "/machine-id'/>\n" : "", dir, dir, io, dir,
	    io, dir, dir, dir, (unsigned)uid, (unsigned)gid, nq, d->memory, ram,
	    qmp,
	    incoming ? "    <qemu:arg value='-incoming'/>\n"
	               "    <qemu:arg value='defer'/>\n" :
	               "");
	if (x == NULL)
		*cause = hb_fmt("out of memory");
out:
	free(tune);
	free(io);
	free(dir);
	free(img);
	free(kern);
	free(initrd);
	free(cmd);
	free(name);
	free(nq);
	free(net);
	free(ram);
	free(qmp);
	return (x);
}

/* What QEMU's command line holds of d alone: its network link's path
 * (as QEMU was given it, commas doubled; malloc'd). */
static char *
lv_mark(const struct desktop *d)
{
	char *p = hb_fmt("%s/lv/net.sock", d->dir),
	     *e = p ? hb_qemu_escape(p) : NULL,
	     *m = e ? hb_fmt("addr.path=%s", e) : NULL;

	free(p);
	free(e);
	return (m);
}

/* Is pid a QEMU whose command line has mark? (The buffer is on the heap:
 * Mission Control asks on civetweb's threads, whose stacks are 100 KB.) */
static int
lv_is_ours(pid_t pid, const char *mark)
{
	size_t len = 16384;
	char *buf = malloc(len);
	ssize_t n = buf ? hb_pid_cmdline(pid, buf, len - 1) : -1;
	int ours = 0;

	if (n > 0) {
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[n] = '\0';
		/* the whole path: what follows it ends the option or the
		 * argument */
		for (char *m = strstr(buf, "qemu-system") ? buf : NULL;
		     m != NULL && (m = strstr(m, mark)) != NULL && !ours; m++)
			ours = m[strlen(mark)] == ' ' ||
			    m[strlen(mark)] == ',' || m[strlen(mark)] == '\0';
	}
	free(buf);
	return (ours);
}

/* QEMU's pid, found among the processes by its command line: libvirt
 * (a second libvirtd on this machine too) keeps its pid file where its
 * own runtime directory is, and tells no client the pid. The host agent
 * runs where the VM does. 0 when none runs. */
static pid_t
lv_pid_of(const struct desktop *d)
{
	char *mark = lv_mark(d);
	struct dirent *e;
	pid_t pid = 0;
	DIR *p;

	if (mark == NULL || (p = opendir("/proc")) == NULL) {
		free(mark);
		return (0);
	}
	while (pid == 0 && (e = readdir(p)) != NULL) {
		long v = strtol(e->d_name, NULL, 10);

		if (v > 0 && v < (1L << 30) && lv_is_ours((pid_t)v, mark))
			pid = (pid_t)v;
	}
	closedir(p);
	free(mark);
	return (pid);
}

/* qemu.pid, if it still names d's QEMU (a pid is recycled). */
static pid_t
lv_pid(const struct desktop *d)
{
	char *p = desktop_path(d, "qemu.pid"), *s = p ? hb_read_file(p) : NULL,
	     *mark = lv_mark(d);
	long v = s ? strtol(s, NULL, 10) : 0;
	pid_t pid = 0;

	if (mark != NULL && v > 0 && v < (1L << 30) &&
	    hb_pid_running((pid_t)v) && lv_is_ours((pid_t)v, mark))
		pid = (pid_t)v;
	free(p);
	free(s);
	free(mark);
	return (pid);
}

/*
 * The guest's network, brought up beside libvirt's start or restore: QEMU
 * listens on lv/net.sock soon after it runs, long before a restore has
 * loaded the RAM, so the keeper (pasta's namespace, the rules, passt and
 * the relay: 0.2-0.4 s here) starts meanwhile. lv_net_begin starts the
 * thread; lv_net_end waits for it: the keeper's pid, or -1 with *cause.
 * With stop set (libvirt failed), the thread gives up waiting for QEMU.
 */
struct lv_net {
	const struct desktop *d;
	pthread_t t;
	atomic_int stop;
	atomic_llong deadline; /* LLONG_MAX until libvirt returned */
	int joined;
	pid_t net;
	char *cause;
};

static void *
lv_net_main(void *arg)
{
	struct lv_net *n = arg;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *ns = desktop_path(n->d, "lv/net.sock");
	int fd = -1, dummy = -1;

	n->net = -1;
	if (ns == NULL || strlen(ns) >= sizeof sa.sun_path) {
		n->cause = hb_fmt("'%s' is too long for a unix socket (a "
		                  "shorter BUREAU_HOME)",
		    ns ? ns : "lv/net.sock");
		goto out;
	}
	strcpy(sa.sun_path, ns);
	while (!atomic_load(&n->stop)) {
		if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
			break;
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
			break;
		close(fd);
		fd = -1;
		if (hb_now_ms() > atomic_load(&n->deadline))
			break;
		usleep(20000);
	}
	if (fd < 0) {
		n->cause = atomic_load(&n->stop) ?
		    hb_fmt("stopped") :
		    hb_fmt("QEMU did not listen for the guest's network on "
		           "'%s' within %d s",
		        ns, LV_LINK_WAIT_MS / 1000);
		goto out;
	}
	if (qemu_guest_ports(n->d, &n->cause) == 0)
		n->net = qemu_net(n->d, fd, &dummy, &n->cause);
	else
		close(fd);
out:
	free(ns);
	return (NULL);
}

static int
lv_net_begin(struct lv_net *n, const struct desktop *d, char **cause)
{
	int rv;

	memset(n, 0, sizeof *n);
	n->d = d;
	n->net = -1;
	atomic_init(&n->stop, 0);
	atomic_init(&n->deadline, LLONG_MAX);
	if ((rv = pthread_create(&n->t, NULL, lv_net_main, n)) != 0) {
		*cause = hb_fmt("cannot start a thread: %s", strerror(rv));
		return (-1);
	}
	return (0);
}

static pid_t
lv_net_end(struct lv_net *n, int stop, char **cause)
{
	if (stop)
		atomic_store(&n->stop, 1);
	atomic_store(&n->deadline, hb_now_ms() + LV_LINK_WAIT_MS);
	if (!n->joined)
		pthread_join(n->t, NULL);
	n->joined = 1;
	if (n->net < 0 && cause != NULL)
		*cause = n->cause ? n->cause : hb_fmt("no network");
	else
		free(n->cause);
	n->cause = NULL;
	return (n->net);
}

/*
 * After libvirt started (or restored) the domain: QEMU's pid into
 * qemu.pid (the host agent watches it), the live view's socket where
 * Mission Control looks (vnc.sock), and the guest's network (the keeper
 * n started, on QEMU's link). On failure the domain is ended.
 */
static int
lv_started(const struct desktop *d, virDomainPtr dom, const char *accel,
    struct lv_net *n, char **cause)
{
	char *pp = desktop_path(d, "qemu.pid"), *ps = NULL,
	     *vs = desktop_path(d, "vnc.sock"),
	     *np = desktop_path(d, "net.pid"), *ap = desktop_path(d, "accel"),
	     *c2 = NULL;
	pid_t pid = 0, net = -1;
	int rv = -1;

	if (pp == NULL || vs == NULL || np == NULL || ap == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	for (long long dl = hb_now_ms() + 5000;
	     (pid = lv_pid_of(d)) == 0 && hb_now_ms() < dl;)
		usleep(20000);
	if (pid == 0) {
		*cause = hb_fmt("libvirt started the domain but no QEMU of "
		                "it runs here (a host on another machine? the "
		                "desktop's host agent must run there)");
		goto out;
	}
	if ((ps = hb_fmt("%d\n", (int)pid)) == NULL ||
	    hb_write_file(pp, ps, strlen(ps), 0600, cause) != 0)
		goto out;
	unlink(vs);
	if (symlink("lv/vnc.sock", vs) != 0) {
		*cause = hb_fmt("cannot link '%s': %s", vs, strerror(errno));
		goto out;
	}
	if ((net = lv_net_end(n, 0, cause)) < 0)
		goto out;
	free(ps);
	if ((ps = hb_fmt("%d\n", (int)net)) != NULL)
		hb_write_file(np, ps, strlen(ps), 0600, &c2);
	hb_write_file(ap, accel, strlen(accel), 0644, &c2);
	/* the relay dialled the guest's daemon while the guest did not run
	 * yet (a restore), and backs off between tries: dial now */
	qemu_net_redial(d);
	rv = 0;
out:
	if (rv != 0) {
		/* the keeper, if it ran, ends with QEMU's link */
		lv_net_end(n, 1, NULL);
		virDomainDestroy(dom);
	}
	free(pp);
	free(ps);
	free(vs);
	free(np);
	free(ap);
	free(c2);
	return (rv);
}

/* What a previous run left that the next must not find. */
static void
lv_reset(const struct desktop *d)
{
	static const char *const files[] = { "qemu.pid", "net.pid", "vnc.sock",
		"lv/vnc.sock", "lv/net.sock", "lv/qmp.sock", "guest.json" };

	qemu_unlink(d, files, sizeof files / sizeof files[0]);
	/* (the names the previous QEMU knew its forks' overlays by) */
	disks_drop_aliases(d);
}

static int
lv_create(const struct desktop *d, const struct image *im, long long disk,
    long long home, char **cause)
{
	return (vm_qemu.create(d, im, disk, home, cause) != 0 ||
	            lv_grant(d, cause) != 0 ?
	        -1 :
	        0);
}

/* Can libvirt's QEMU user open /dev/kvm? Asked of the kernel, by a child
 * that becomes that user (its groups too): Debian's /dev/kvm is root's
 * and the kvm group's where udev runs, root's alone where it does not
 * (here: crw------- root root), while libvirtd, as root, lists KVM
 * either way. */
static int
lv_kvm_open_as(uid_t uid, gid_t gid)
{
	struct passwd *pw = getpwuid(uid);
	gid_t groups[64];
	int ng = 64, st = 0;
	pid_t pid;

	if (pw == NULL || getgrouplist(pw->pw_name, gid, groups, &ng) < 0)
		return (0);
	if ((pid = fork()) < 0)
		return (0);
	if (pid == 0) {
		if (setgroups((size_t)ng, groups) != 0 || setgid(gid) != 0 ||
		    setuid(uid) != 0)
			_exit(2);
		_exit(open("/dev/kvm", O_RDWR | O_CLOEXEC) >= 0 ? 0 : 1);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return (WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* kvm where asked, or (auto) where the host's libvirt offers it, KVM
 * really runs a guest here (vm_qemu's probe: all libvirt hosts are on
 * this machine) and libvirt's QEMU user can open it; tcg else. */
static int
lv_accel(const struct desktop *d, const struct image *im, const char *want,
    const char **out, char **cause)
{
	virConnectPtr c;
	const char *probe = "tcg";
	char *caps, *c2 = NULL;
	uid_t uid;
	gid_t gid;
	int kvm;

	if (want == NULL)
		want = "auto";
	if (strcmp(want, "auto") != 0 && strcmp(want, "kvm") != 0 &&
	    strcmp(want, "tcg") != 0) {
		*cause = hb_fmt("invalid accel '%s': kvm, tcg or auto", want);
		return (-1);
	}
	if (strcmp(want, "tcg") == 0) {
		*out = "tcg";
		return (0);
	}
	if ((c = lv_conn(d, cause)) == NULL)
		return (-1);
	caps = virConnectGetCapabilities(c);
	kvm = caps != NULL && strstr(caps, "<domain type='kvm'") != NULL;
	free(caps);
	virConnectClose(c);
	if (!kvm) {
		if (strcmp(want, "kvm") == 0) {
			*cause = hb_fmt("host '%s' offers no KVM (its libvirt "
			                "lists only domain type qemu)",
			    d->host);
			return (-1);
		}
		*out = "tcg";
		return (0);
	}
	if (lv_user(&uid, &gid, cause) != 0)
		return (-1);
	if (!lv_kvm_open_as(uid, gid)) {
		if (strcmp(want, "kvm") == 0) {
			*cause = hb_fmt(
			    "libvirt's QEMU user (uid %u) cannot "
			    "open /dev/kvm on host '%s' (its owner, "
			    "group or ACL must let it)",
			    (unsigned)uid, d->host);
			return (-1);
		}
		*out = "tcg";
		return (0);
	}
	if (strcmp(want, "auto") == 0 &&
	    vm_qemu.accel(d, im, "auto", &probe, &c2) == 0)
		*out = probe;
	else
		*out = strcmp(want, "kvm") == 0 ? "kvm" : "tcg";
	free(c2);
	return (0);
}

/* A boot's RAM file: new, sparse, the guest's memory long (QEMU, as
 * libvirt's user, cannot create files in d's directory). */
static int
lv_ram_fresh(const struct desktop *d, char **cause)
{
	char *p = desktop_path(d, "ram");
	int fd = -1, rv = -1;

	if (p == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	qemu_drop_ram(d);
	if ((fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0 ||
	    ftruncate(fd, (off_t)d->memory << 20) != 0)
		*cause = hb_fmt("cannot make the RAM file '%s': %s", p,
		    strerror(errno));
	else
		rv = 0;
	if (fd >= 0)
		close(fd);
	free(p);
	return (rv);
}

/* Before libvirt starts d (or starts it to restore its state: incoming):
 * its host reached (*c, the caller closes it), no domain of d's running
 * there, what a previous run left removed, a boot's RAM file made, the
 * hostname for fw_cfg written and QEMU's user given what it opens. */
static int
lv_prepare(const struct desktop *d, int incoming, virConnectPtr *c,
    char **cause)
{
	char *hn = desktop_path(d, "hostname");
	virDomainPtr dom;
	int rv = -1;

	*c = NULL;
	if (hn == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	if ((dom = lv_dom(d, c, cause)) != NULL) {
		*cause = hb_fmt("domain bureau-%s already runs on host '%s'",
		    d->name, d->host);
		virDomainFree(dom);
	} else if (*c != NULL) {
		lv_reset(d);
		if ((incoming || lv_ram_fresh(d, cause) == 0) &&
		    qemu_write_hostname(d, hn, cause) == 0 &&
		    lv_grant(d, cause) == 0)
			rv = 0;
	}
	free(hn);
	return (rv);
}

static int
lv_start(const struct desktop *d, const struct image *im, const char *accel,
    char **cause)
{
	virConnectPtr c = NULL;
	virDomainPtr dom = NULL;
	char *xml = NULL;
	struct lv_net n;
	int rv = -1;

	if (lv_prepare(d, 0, &c, cause) != 0 ||
	    (xml = lv_xml(d, im, accel, 0, cause)) == NULL ||
	    lv_net_begin(&n, d, cause) != 0)
		goto out;
	if ((dom = virDomainCreateXML(c, xml, 0)) == NULL) {
		*cause = hb_fmt("libvirt did not start the domain: %s",
		    virGetLastErrorMessage());
		lv_net_end(&n, 1, NULL);
		goto out;
	}
	rv = lv_started(d, dom, accel, &n, cause);
out:
	lv_close(c, dom);
	free(xml);
	return (rv);
}

static char *
lv_state(const struct desktop *d, pid_t *pid)
{
	virConnectPtr c = NULL;
	virDomainPtr dom;
	char *cause = NULL, *s;
	int st = 0, reason;

	*pid = 0;
	dom = lv_dom(d, &c, &cause);
	if (c == NULL) {
		/* a saved desktop is that whether its host answers or not (a
		 * restore removes the state) */
		s = lv_saved(d) ? strdup("saved") :
		                  hb_fmt("unknown (%s)", cause ? cause : "?");
		free(cause);
		return (s);
	}
	if (dom == NULL || virDomainGetState(dom, &st, &reason, 0) != 0)
		st = VIR_DOMAIN_SHUTOFF;
	lv_close(c, dom);
	if (st == VIR_DOMAIN_SHUTOFF && lv_saved(d))
		return (strdup("saved"));
	if (st == VIR_DOMAIN_RUNNING || st == VIR_DOMAIN_PAUSED ||
	    st == VIR_DOMAIN_BLOCKED)
		*pid = lv_pid(d);
	return (strdup(st == VIR_DOMAIN_RUNNING || st == VIR_DOMAIN_BLOCKED ?
	        "running" :
	        st == VIR_DOMAIN_PAUSED      ? "paused" :
	        st == VIR_DOMAIN_SHUTDOWN    ? "shutting down" :
	        st == VIR_DOMAIN_CRASHED     ? "crashed" :
	        st == VIR_DOMAIN_PMSUSPENDED ? "suspended" :
	                                       "stopped"));
}

static int
lv_shutdown(const struct desktop *d, int timeout_ms, char **cause)
{
	virConnectPtr c = NULL;
	virDomainPtr dom = lv_dom(d, &c, cause);
	long long dl = hb_now_ms() + timeout_ms;
	int rv = -1;

	if (dom == NULL) {
		rv = c != NULL ? 0 : -1; /* not running */
		goto out;
	}
	if (virDomainShutdown(dom) != 0) {
		*cause = hb_fmt("libvirt: %s", virGetLastErrorMessage());
		goto out;
	}
	while (virDomainIsActive(dom) == 1 && hb_now_ms() < dl)
		usleep(100000);
	if (virDomainIsActive(dom) == 1)
		*cause = hb_fmt("the guest did not power off within %d s",
		    timeout_ms / 1000);
	else
		rv = 0;
out:
	lv_close(c, dom);
	return (rv);
}

static int
lv_kill(const struct desktop *d, char **cause)
{
	virConnectPtr c = NULL;
	virDomainPtr dom = lv_dom(d, &c, cause);
	int rv = c != NULL ? 0 : -1;

	if (dom != NULL && virDomainDestroy(dom) != 0 &&
	    virDomainIsActive(dom) == 1) {
		*cause = hb_fmt("libvirt did not end the domain: %s",
		    virGetLastErrorMessage());
		rv = -1;
	}
	lv_close(c, dom);
	return (rv);
}

static int
lv_pause_resume(const struct desktop *d, int pause, char **cause)
{
	virConnectPtr c = NULL;
	virDomainPtr dom = lv_dom(d, &c, cause);
	int rv = -1;

	if (dom == NULL) {
		if (c != NULL)
			*cause = hb_fmt("desktop '%s' is not running", d->name);
	} else if ((pause ? virDomainSuspend(dom) : virDomainResume(dom)) != 0)
		*cause = hb_fmt("libvirt: %s", virGetLastErrorMessage());
	else
		rv = 0;
	lv_close(c, dom);
	return (rv);
}

static int
lv_pause(const struct desktop *d, char **cause)
{
	return (lv_pause_resume(d, 1, cause));
}

static int
lv_resume(const struct desktop *d, char **cause)
{
	return (lv_pause_resume(d, 0, cause));
}

/*
 * Snapshots as on `local`: QEMU's own (snapshot-save, -load: the RAM and
 * devices into the system disk, both disks' state, internal qcow2
 * snapshots) through bureau's monitor, libvirt not involved; a stopped
 * desktop's with qemu-img (disks.c).
 */
static int
lv_snapshot(const struct desktop *d, const char *tag, int restore, int *live,
    char **cause)
{
	char *qs, *c2 = NULL;
	struct qmp *q = NULL;
	int rv = -1;

	*live = tag != NULL && lv_pid(d) != 0;
	if (!*live) {
		rv = qemu_snapshot_offline(d, tag, restore, "lv.state", cause);
		/* Disks reverted under a saved state would not be the disks
		 * its memory knew: the next start boots. */
		if (rv == 0 && tag != NULL && restore)
			lv_discard(d);
		return (rv);
	}
	if ((qs = desktop_path(d, "lv/qmp.sock")) == NULL) {
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	if (access(qs, F_OK) != 0)
		*cause = hb_fmt("desktop '%s' was started by an older bureau "
		                "(no QMP socket of its own): stop it once",
		    d->name);
	/* (one connection: the monitor serves one client at a time) */
	else if (qmp_open(&q, qs, 30000, cause) != 0)
		;
	else if (!restore)
		rv = qemu_job_q(q, "snapshot-save", tag, cause);
	else if (qmp_exec(q, "stop", NULL, NULL, cause) == 0) {
		rv = qemu_job_q(q, "snapshot-load", tag, cause);
		qmp_exec(q, "cont", NULL, NULL, &c2);
		free(c2);
		qemu_net_redial(d); /* (as qemu.c's snapshot says) */
	}
	qmp_close(q);
	free(qs);
	return (rv);
}

/*
 * Stop saves d as `local` does (qemu_state.c), not through libvirt's
 * virDomainSave: the RAM stays in d's RAM file (QEMU maps it shared: the
 * page cache holds it and it goes to disk), and QEMU writes only the
 * devices' state (migration capability x-ignore-shared), a few MB, into
 * lv.state, through a QMP monitor of bureau's own (lv/qmp.sock) and a
 * descriptor passed to it (libvirt's seccomp sandbox forbids QEMU the
 * exec: URIs that `local` uses). libvirt's save wrote the whole RAM
 * through its iohelper and its restore read it back: 4.3-5.4 s to save,
 * 3.3-4.0 s to restore a 1536M minimal desktop here (TCG), of which
 * 1.5-1.7 s reading the RAM into fresh memory. Then lv.state.json
 * records what the state goes with (qemu_state_seal_as): a RAM file or
 * disk changed since refuses the restore.
 */
static int
lv_save(const struct desktop *d, char **cause)
{
	virConnectPtr c = NULL;
	virDomainPtr dom = lv_dom(d, &c, cause);
	struct qmp *q = NULL;
	char *tmp = desktop_path(d, "lv.state.tmp"),
	     *qs = desktop_path(d, "lv/qmp.sock"),
	     *ram = desktop_path(d, "ram");
	char *full = NULL, *series = NULL, *c2 = NULL;
	int rv = -1, stopped = 0;

	if (tmp == NULL || qs == NULL || ram == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (dom == NULL) {
		if (c != NULL)
			*cause = hb_fmt("desktop '%s' is not running", d->name);
		goto out;
	}
	if (access(qs, F_OK) != 0) {
		*cause = hb_fmt("desktop '%s' was started by an older bureau "
		                "(no QMP socket of its own): stop --shutdown "
		                "it once",
		    d->name);
		goto out;
	}
	if (qmp_open(&q, qs, 30000, cause) != 0 ||
	    qemu_qmp_version(q, &full, &series, cause) != 0 ||
	    qmp_exec(q, "stop", NULL, NULL, cause) != 0)
		goto out;
	stopped = 1;
	if (qemu_state_write_fd(q, tmp, cause) != 0)
		goto out;
	/* The VM is saved: from here on it must not run again. */
	stopped = 0;
	qmp_close(q);
	q = NULL;
	if (virDomainDestroy(dom) != 0 && virDomainIsActive(dom) == 1) {
		*cause = hb_fmt("libvirt did not end the saved domain: %s",
		    virGetLastErrorMessage());
		goto out;
	}
	/* On disk before the state says it can be restored: the RAM file's
	 * pages are the guest's memory, a state without them is garbage. */
	if (qemu_fsync_path(ram, 1) != 0) {
		*cause = hb_fmt("cannot sync the RAM file: %s",
		    strerror(errno));
		goto out;
	}
	if (qemu_state_seal_as(d, "lv.state", tmp, full, series, 0, 0, 0,
	        cause) != 0)
		goto out;
	rv = 0;
out:
	if (rv != 0 && stopped && qemu_state_cont(q, 1, &c2) != 0) {
		/* Not saved: the desktop runs on as it was, or says why not. */
		char *m = hb_fmt("%s; and it did not run again: %s", *cause,
		    c2 ? c2 : "?");
		free(*cause);
		*cause = m;
	}
	free(c2);
	if (rv != 0 && tmp != NULL)
		unlink(tmp);
	qmp_close(q);
	lv_close(c, dom);
	free(tmp);
	free(qs);
	free(ram);
	free(full);
	free(series);
	return (rv);
}

/* A state saved by libvirt itself (virDomainSave: lv.save, bureau before
 * lv.state), restored by libvirt. */
static int
lv_restore_image(const struct desktop *d, const char *accel, char **cause)
{
	virConnectPtr c = NULL;
	virDomainPtr dom = NULL;
	char *file = desktop_path(d, "lv.save"), *name = NULL;
	struct lv_net n;
	int rv = -1;

	if (file == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (lv_prepare(d, 1, &c, cause) != 0 || lv_net_begin(&n, d, cause) != 0)
		goto out;
	if (virDomainRestoreFlags(c, file, NULL, VIR_DOMAIN_SAVE_RUNNING) !=
	    0) {
		*cause = hb_fmt("libvirt did not restore the domain: %s",
		    virGetLastErrorMessage());
		lv_net_end(&n, 1, NULL);
		goto out;
	}
	/* Once it runs its RAM and disks move on: the state is spent (a
	 * later start must boot, never go back to it). */
	unlink(file);
	if ((name = lv_domname(d)) == NULL ||
	    (dom = virDomainLookupByName(c, name)) == NULL) {
		*cause = hb_fmt("the restored domain is gone");
		lv_net_end(&n, 1, NULL);
		goto out;
	}
	rv = lv_started(d, dom, accel, &n, cause);
out:
	lv_close(c, dom);
	free(file);
	free(name);
	return (rv);
}

/*
 * lv.state back (see lv_save): libvirt starts the domain paused, with
 * -incoming defer on its command line and the same RAM file; the state
 * goes in through bureau's monitor; libvirt resumes it. The keeper
 * starts meanwhile (lv_net_begin).
 */
static int
lv_restore(const struct desktop *d, const struct image *im, const char *accel,
    char **cause)
{
	virConnectPtr c = NULL;
	virDomainPtr dom = NULL;
	struct qmp *q = NULL;
	json_t *warm = qemu_warm_from(d);
	const char *wdir = warm ?
	    json_string_value(json_object_get(warm, "warm")) :
	    NULL;
	/* (meta: this desktop's record, removed with its spent state;
	 * qemu_state_meta reads the record, the warm state's for a clone) */
	char *meta = desktop_path(d, "lv.state.json"),
	     *st = wdir ? hb_fmt("%s/lv.state", wdir) :
	                  desktop_path(d, "lv.state"),
	     *qs = desktop_path(d, "lv/qmp.sock"), *xml = NULL, *full = NULL,
	     *series = NULL;
	const char *was;
	json_t *j = NULL;
	struct lv_net n;
	long long t0, t1;
	int rv = -1, fd = -1, net = 0;

	if (meta == NULL || st == NULL || qs == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	if (wdir == NULL && access(st, F_OK) != 0) {
		rv = lv_restore_image(d, accel, cause);
		goto out;
	}
	/* A clone's first start: the warm state of its image for libvirt
	 * hosts (qemu_warm.c), which stays (other clones read it), on a
	 * copy of its RAM file (sparse: what the warm guest wrote). */
	if ((j = qemu_state_meta(d, wdir ? wdir : d->dir, "lv.state", warm,
	         cause)) == NULL ||
	    (wdir != NULL && qemu_warm_copy_ram(d, wdir, cause) != 0))
		goto out;
	if (lv_prepare(d, 1, &c, cause) != 0 ||
	    (xml = lv_xml(d, im, accel, 1, cause)) == NULL)
		goto out;
	t0 = hb_now_ms();
	if (lv_net_begin(&n, d, cause) != 0)
		goto out;
	net = 1;
	if ((dom = virDomainCreateXML(c, xml, VIR_DOMAIN_START_PAUSED)) ==
	    NULL) {
		*cause = hb_fmt("libvirt did not start the domain: %s",
		    virGetLastErrorMessage());
		goto out;
	}
	if (qmp_open(&q, qs, 30000, cause) != 0 ||
	    qemu_qmp_version(q, &full, &series, cause) != 0)
		goto out;
	/* (as on `local`: another series may read the stream otherwise) */
	was = json_string_value(json_object_get(j, "qemu_series"));
	if (was == NULL || strcmp(was, series) != 0) {
		*cause = hb_fmt("it was saved by QEMU %s, this host runs QEMU "
		                "%s",
		    json_string_value(json_object_get(j, "qemu")) ?: "?", full);
		goto out;
	}
	if ((fd = open(st, O_RDONLY | O_CLOEXEC)) < 0) {
		*cause = hb_fmt("cannot open '%s': %s", st, strerror(errno));
		goto out;
	}
	if (qemu_set_ignore_shared(q, 1, cause) != 0 ||
	    qmp_getfd(q, "bureau-state", fd, cause) != 0 ||
	    qmp_exec(q, "migrate-incoming",
	        json_pack("{s:s}", "uri", "fd:bureau-state"), NULL,
	        cause) != 0 ||
	    qemu_state_loaded(d, q, cause) != 0 ||
	    qemu_set_ignore_shared(q, 0, cause) != 0)
		goto out;
	if (warm != NULL) {
		/* Disks larger than the warm state's grow online (the guest's
		 * udev rules grow the file systems), as on `local`. */
		char nodes[2][64];

		if (qemu_top_nodes(q, nodes[0], nodes[1], sizeof nodes[0], NULL,
		        cause) != 0 ||
		    qemu_warm_grow(q, warm, nodes[0], nodes[1], cause) != 0)
			goto out;
		/* From here on an ordinary desktop on its own RAM. */
		qemu_warm_forget(d);
	} else {
		/* Once it runs its RAM and disks move on: the state is spent
		 * (a later start must boot, never go back to it). */
		unlink(st);
		unlink(meta);
	}
	if (virDomainResume(dom) != 0) {
		*cause = hb_fmt(
		    "libvirt did not resume the restored domain: %s",
		    virGetLastErrorMessage());
		goto out;
	}
	t1 = hb_now_ms();
	net = 0;
	rv = lv_started(d, dom, accel, &n, cause);
	if (rv == 0)
		fprintf(stderr,
		    "bureau: restored desktop '%s' on host '%s' in %.2f s, "
		    "its network %.2f s later\n",
		    d->name, d->host, (t1 - t0) / 1000.0,
		    (hb_now_ms() - t1) / 1000.0);
out:
	if (net) {
		lv_net_end(&n, 1, NULL);
		if (dom != NULL)
			virDomainDestroy(dom);
	}
	if (fd >= 0)
		close(fd);
	qmp_close(q);
	lv_close(c, dom);
	json_decref(j);
	json_decref(warm);
	free(meta);
	free(st);
	free(qs);
	free(xml);
	free(full);
	free(series);
	return (rv);
}

static int
lv_saved(const struct desktop *d)
{
	char *p = desktop_path(d, "lv.state"), *o = desktop_path(d, "lv.save");
	int r = (p != NULL && access(p, F_OK) == 0) ||
	    (o != NULL && access(o, F_OK) == 0);

	free(p);
	free(o);
	return (r);
}

static void
lv_discard(const struct desktop *d)
{
	static const char *const files[] = { "lv.state", "lv.state.json",
		"lv.state.tmp", "lv.save", "lv.save.tmp" };

	qemu_unlink(d, files, sizeof files / sizeof files[0]);
}

static int
lv_stats(const struct desktop *d, struct vm_stats *st)
{
	return (vm_stats_of(d, lv_pid(d), st));
}

static int
lv_clone(const struct desktop *d, const struct image *im, long long disk,
    long long home, char **why)
{
	int r;

	(void)im;
	if ((r = qemu_clone_lv(d, disk, home, why)) == 1 &&
	    lv_grant(d, why) != 0)
		return (-1);
	return (r);
}

/* A fork, as local's (qemu_fork.c), through bureau's own monitor; its
 * state is the devices' (lv.state), its RAM file copied. libvirt does not
 * see the disks' new top layers while the parent runs on (its next start
 * describes them: libvirt reads the chain from the images). */
static int
lv_fork(const struct desktop *d, const struct desktop *c,
    struct vm_fork_info *fi, char **cause)
{
	struct qemu_fork_how how = { "lv/qmp.sock", "lv.state", lv_pid(d),
		lv_grant_file };
	char *qs = desktop_path(d, "lv/qmp.sock");
	int old = qs == NULL || access(qs, F_OK) != 0;

	free(qs);
	if (old) {
		*cause = hb_fmt("desktop '%s' was started by an older bureau "
		                "(no QMP socket of its own): stop and start it "
		                "once, then fork it",
		    d->name);
		return (-1);
	}
	return (qemu_fork_how(d, c, &how, fi, cause));
}

const struct vm_backend vm_libvirt = {
	.name = "libvirt",
	.create = lv_create,
	.accel = lv_accel,
	.start = lv_start,
	.pid = lv_pid,
	.state = lv_state,
	.shutdown = lv_shutdown,
	.kill = lv_kill,
	.pause = lv_pause,
	.resume = lv_resume,
	.snapshot = lv_snapshot,
	.save = lv_save,
	.restore = lv_restore,
	.saved = lv_saved,
	.discard = lv_discard,
	.stats = lv_stats,
	.clone = lv_clone,
	.warm_find = qemu_warm_find_lv,
	.cloned = qemu_cloned,
	.warm_token = qemu_warm_token,
	.fork = lv_fork,
};

const struct vm_backend *
vm_backend_for(const struct desktop *d)
{
	if (d != NULL && d->remote_dir != NULL)
		return (&vm_remote);
	return (d != NULL && !host_is_local(d->host) ? &vm_libvirt : &vm_qemu);
}

int
vm_host_probe(const char *uri, long long *free_bytes, char **cause)
{
	virConnectPtr c;
	unsigned long long fm;

	virSetErrorFunc(NULL, lv_quiet);
	*free_bytes = -1;
	if ((c = virConnectOpen(uri)) == NULL) {
		*cause = hb_fmt("%s", virGetLastErrorMessage());
		return (-1);
	}
	/* libvirt probes QEMU as root (KVM found) and checks KVM as its QEMU
	 * user (KVM unusable): each disagrees with the other, and libvirt
	 * probes QEMU again at every call that needs its capabilities (a
	 * start too: 13-20 s each here, under TCG) */
	{
		char *caps = virConnectGetCapabilities(c), *c2 = NULL;
		uid_t uid;
		gid_t gid;

		if (host_here(uri) && caps != NULL &&
		    strstr(caps, "<domain type='kvm'") &&
		    lv_user(&uid, &gid, &c2) == 0 && !lv_kvm_open_as(uid, gid))
			fprintf(stderr,
			    "bureau: warning: libvirt at %s lists KVM, which "
			    "its QEMU user (uid %u) cannot open: libvirt "
			    "probes QEMU again at every start (Debian's udev "
			    "rule gives /dev/kvm group kvm, mode 0660)\n",
			    uri, (unsigned)uid);
		free(caps);
		free(c2);
	}
	/* the host's free memory as its libvirt reports it (all cells) */
	if ((fm = virNodeGetFreeMemory(c)) > 0)
		*free_bytes = (long long)fm;
	virConnectClose(c);
	return (0);
}
