/*
 * Unit tests: the URIs of `bureau host add NAME URI` (store/hosturi.c's
 * remote_parse for qemu+ssh://, store/hosts.c's host_valid_name and
 * host_here). What the parser takes out of a URI goes onto ssh's command
 * line (cli/remote.c's ssh_base: -p PORT, -l USER, -i KEYFILE,
 * -oUserKnownHostsFile=F, then "--" MACHINE, run by execvp: no shell
 * here) and, for the libvirt URI there, onto the remote shell's command
 * line (util/shquote.c). So: a machine never starts with '-', a port is
 * digits, a known hosts file is one file as ssh's option parser reads
 * it, and the libvirt URI there reaches the shell there byte for byte.
 * Where ssh is installed, its own reading of those arguments is checked
 * too (ssh -G prints the configuration it would use; it connects
 * nowhere).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-bridge/store/hosturi.h"
#include "host-bridge/store/store.h"
#include "host-bridge/util/shquote.h"
#include "host-bridge/util/util.h"

/* uri parsed into *r: 0, or -1 (then a cause quoting the URI, and *r
 * cleared). */
static int
parse(const char *uri, struct remote *r)
{
	char *cause = NULL;
	int rv = remote_parse(uri, r, &cause);

	if (rv != 0) {
		assert_int_equal(rv, -1);
		assert_non_null(cause);
		assert_non_null(strstr(cause, uri));
		assert_null(r->machine);
		assert_null(r->user);
		assert_null(r->port);
		assert_null(r->keyfile);
		assert_null(r->known_hosts);
		assert_null(r->ruri);
		free(cause);
	} else {
		assert_null(cause);
		assert_non_null(r->machine);
		assert_non_null(r->ruri);
	}
	return (rv);
}

static void
refused(const char *uri)
{
	struct remote r;

	if (parse(uri, &r) != -1)
		fail_msg("'%s' was taken (machine '%s')", uri, r.machine);
}

/* s equal to want, both NULL, or a failure naming what. */
static void
same(const char *what, const char *s, const char *want)
{
	if (want == NULL ? s != NULL : s == NULL || strcmp(s, want) != 0)
		fail_msg("%s: '%s', not '%s'", what, s ? s : "(none)",
		    want ? want : "(none)");
}

/* uri taken, into these parts. */
static void
taken(const char *uri, const char *user, const char *machine, const char *port,
    const char *ruri)
{
	struct remote r;

	if (parse(uri, &r) != 0)
		fail_msg("'%s' was refused", uri);
	same("user", r.user, user);
	same("machine", r.machine, machine);
	same("port", r.port, port);
	same("libvirt URI there", r.ruri, ruri);
	remote_clear(&r);
}

static void
test_forms(void **state)
{
	(void)state;
	taken("qemu+ssh://m/system", NULL, "m", NULL, "qemu:///system");
	taken("qemu+ssh://alice@m.example.org:2222/system", "alice",
	    "m.example.org", "2222", "qemu:///system");
	taken("qemu+ssh://203.0.113.7/system", NULL, "203.0.113.7", NULL,
	    "qemu:///system");
	taken("qemu+ssh://m/session", NULL, "m", NULL, "qemu:///session");
	taken("qemu+ssh://m/", NULL, "m", NULL, "qemu:///");
	/* %XX decoded in the user and the machine */
	taken("qemu+ssh://al%69ce@%6D/system", "alice", "m", NULL,
	    "qemu:///system");
	taken("qemu+ssh://a%40b@m/system", "a@b", "m", NULL, "qemu:///system");
	/* an empty user is passed as one (ssh -l ''), not dropped */
	taken("qemu+ssh://@m/system", "", "m", NULL, "qemu:///system");
}

static void
test_not_ssh(void **state)
{
	(void)state;
	refused("qemu:///system");
	refused("qemu+tcp://m/system");
	refused("qemu+ssh:/m/system");
	refused("QEMU+SSH://m/system");
	refused(" qemu+ssh://m/system");
	refused("ssh://m/system");
	refused("");
}

static void
test_shape(void **state)
{
	(void)state;
	/* no path: /system (or another) is needed */
	refused("qemu+ssh://m");
	refused("qemu+ssh://m?keyfile=/k");
	refused("qemu+ssh://alice@m:22");
	/* no machine */
	refused("qemu+ssh:///system");
	refused("qemu+ssh://alice@/system");
	refused("qemu+ssh://:22/system");
	refused("qemu+ssh://alice@:22/system");
	refused("qemu+ssh://%00/system");
}

static void
test_ports(void **state)
{
	(void)state;
	taken("qemu+ssh://m:22/system", NULL, "m", "22", "qemu:///system");
	taken("qemu+ssh://m:65535/system", NULL, "m", "65535",
	    "qemu:///system");
	/* digits only, at most 5: nothing else can reach -p. The range is
	 * ssh's to check ("Bad port '0'", "Bad port '65536'"). */
	taken("qemu+ssh://m:0/system", NULL, "m", "0", "qemu:///system");
	taken("qemu+ssh://m:65536/system", NULL, "m", "65536",
	    "qemu:///system");
	refused("qemu+ssh://m:/system");
	refused("qemu+ssh://m:123456/system");
	refused("qemu+ssh://m:22a/system");
	refused("qemu+ssh://m:a22/system");
	refused("qemu+ssh://m:-1/system");
	refused("qemu+ssh://m:+22/system");
	refused("qemu+ssh://m: 22/system");
	refused("qemu+ssh://m:0x16/system");
	refused("qemu+ssh://m:%32%32/system");
	refused("qemu+ssh://m:22:22/system");
	refused("qemu+ssh://m:-oProxyCommand=x/system");
}

static void
test_ipv6(void **state)
{
	(void)state;
	taken("qemu+ssh://[2001:db8::1]:2222/system", NULL, "2001:db8::1",
	    "2222", "qemu:///system");
	taken("qemu+ssh://alice@[::1]/system", "alice", "::1", NULL,
	    "qemu:///system");
	taken("qemu+ssh://[fe80::1%25eth0]/system", NULL, "fe80::1%eth0", NULL,
	    "qemu:///system");
	refused("qemu+ssh://[::1/system");
	refused("qemu+ssh://[]/system");
	refused("qemu+ssh://[]:22/system");
	refused("qemu+ssh://[::1]:/system");
	refused("qemu+ssh://[::1]:x/system");
	refused("qemu+ssh://[::1]:123456/system");
	/* unbracketed, its colons are a port's */
	refused("qemu+ssh://2001:db8::1/system");
	refused("qemu+ssh://::1/system");
	/* after ']' only ":PORT" means anything: the rest is dropped, none
	 * of it reaches ssh */
	taken("qemu+ssh://[::1]x/system", NULL, "::1", NULL, "qemu:///system");
}

static void
test_dash(void **state)
{
	(void)state;
	/* a machine never starts with '-' (ssh gets "--" before it, all the
	 * same), however it is written */
	refused("qemu+ssh://-oProxyCommand=x/system");
	refused("qemu+ssh://-m/system");
	refused("qemu+ssh://%2DoProxyCommand=x/system");
	refused("qemu+ssh://%2doProxyCommand=x/system");
	refused("qemu+ssh://alice@-m/system");
	refused("qemu+ssh://alice@%2Dm/system");
	refused("qemu+ssh://[-oProxyCommand=x]/system");
	refused("qemu+ssh://[%2D1]/system");
	refused("qemu+ssh://-/system");
	refused("qemu+ssh://-:22/system");
	/* a '-' later is a host name's */
	taken("qemu+ssh://m-1/system", NULL, "m-1", NULL, "qemu:///system");
	/* a user starting with '-' is the value of ssh's -l (checked with
	 * ssh itself below): never an option of its own */
	taken("qemu+ssh://-oProxyCommand=x@m/system", "-oProxyCommand=x", "m",
	    NULL, "qemu:///system");
}

/* uri taken, with these parameters. */
static void
params(const char *uri, const char *keyfile, const char *known_hosts,
    int no_verify)
{
	struct remote r;

	if (parse(uri, &r) != 0)
		fail_msg("'%s' was refused", uri);
	same("keyfile", r.keyfile, keyfile);
	same("known_hosts", r.known_hosts, known_hosts);
	if (r.no_verify != no_verify)
		fail_msg("'%s': no_verify %d", uri, r.no_verify);
	same("libvirt URI there", r.ruri, "qemu:///system");
	remote_clear(&r);
}

static void
test_query(void **state)
{
	(void)state;
	params("qemu+ssh://m/system", NULL, NULL, 0);
	params("qemu+ssh://m/system?keyfile=/k/id", "/k/id", NULL, 0);
	params("qemu+ssh://m/system?known_hosts=/k/kh", NULL, "/k/kh", 0);
	params("qemu+ssh://m/system?keyfile=/k/id&known_hosts=/k/kh&"
	       "no_verify=1",
	    "/k/id", "/k/kh", 1);
	params("qemu+ssh://m/system?no_verify=0", NULL, NULL, 0);
	params("qemu+ssh://m/system?no_verify=", NULL, NULL, 0);
	params("qemu+ssh://m/system?no_verify=yes", NULL, NULL, 0);
	/* libvirt's other parameters, and unknown ones: not ssh's here */
	params("qemu+ssh://m/system?socket=/x&foo=bar&keyfile=/k", "/k", NULL,
	    0);
	params("qemu+ssh://m/system?keyfile", NULL, NULL, 0);
	params("qemu+ssh://m/system?xkeyfile=/a&keyfilex=/b", NULL, NULL, 0);
	params("qemu+ssh://m/system?&&keyfile=/k&", "/k", NULL, 0);
	params("qemu+ssh://m/system?no_verify", NULL, NULL, 0);
	/* the names as libvirt spells them, lowercase */
	params("qemu+ssh://m/system?KEYFILE=/k", NULL, NULL, 0);
	/* values %XX-decoded: a '&' or '=' or blank inside one */
	params("qemu+ssh://m/system?keyfile=/a%26b%3Dc%20d", "/a&b=c d", NULL,
	    0);
	params("qemu+ssh://m/system?keyfile=/k=v", "/k=v", NULL, 0);
	params("qemu+ssh://m/system?keyfile=", "", NULL, 0);
	/* given twice: the last */
	params("qemu+ssh://m/system?keyfile=/a&keyfile=/b", "/b", NULL, 0);
	params("qemu+ssh://m/system?known_hosts=/a&known_hosts=/b", NULL, "/b",
	    0);
	/* a key file is the value of ssh's -i, taken as it is: blanks and
	 * shell characters are a file name's (no shell reads it) */
	params("qemu+ssh://m/system?keyfile=/k%20dir/id;$(x)'%22",
	    "/k dir/id;$(x)'\"", NULL, 0);
	/* the query is not the path's */
	taken("qemu+ssh://m/system?x=/y", NULL, "m", NULL, "qemu:///system");
}

/*
 * known_hosts goes to ssh as -oUserKnownHostsFile=F, which ssh reads as
 * a line of its configuration: blanks separate several files, quotes
 * and backslashes are taken away, a '#' starting it makes it a comment
 * (the option then not given: ssh checks the default files instead).
 * The key of the machine would be checked against files the operator
 * never named (a relative one in whatever directory bureau runs from):
 * refused.
 */
static void
test_known_hosts_one_file(void **state)
{
	(void)state;
	params("qemu+ssh://m/system?known_hosts=/etc/bureau/kh", NULL,
	    "/etc/bureau/kh", 0);
	params("qemu+ssh://m/system?known_hosts=/a%23b", NULL, "/a#b", 0);
	/* ssh's own expansions, as documented for the option */
	params("qemu+ssh://m/system?known_hosts=~/.ssh/kh", NULL, "~/.ssh/kh",
	    0);
	params("qemu+ssh://m/system?known_hosts=%25d/kh", NULL, "%d/kh", 0);
	params("qemu+ssh://m/system?known_hosts=/a;b$c", NULL, "/a;b$c", 0);
	refused("qemu+ssh://m/system?known_hosts=/etc/my%20hosts");
	refused("qemu+ssh://m/system?known_hosts=/etc/kh /tmp/mine");
	refused("qemu+ssh://m/system?known_hosts=/etc/kh%09mine");
	refused("qemu+ssh://m/system?known_hosts=/etc/kh%0Amine");
	refused("qemu+ssh://m/system?known_hosts=/etc/kh%0D");
	refused("qemu+ssh://m/system?known_hosts=/etc/kh%0B");
	refused("qemu+ssh://m/system?known_hosts=/etc/kh%0C");
	refused("qemu+ssh://m/system?known_hosts=%22/etc/kh%22");
	refused("qemu+ssh://m/system?known_hosts=/etc/k'h");
	refused("qemu+ssh://m/system?known_hosts=/etc/k%5Ch");
	refused("qemu+ssh://m/system?known_hosts=%23/etc/kh");
	refused("qemu+ssh://m/system?known_hosts=/etc/kh%01");
	refused("qemu+ssh://m/system?known_hosts=/etc/kh%7F");
	/* and so after a good one */
	refused("qemu+ssh://m/system?keyfile=/k&known_hosts=/a%20b");
	/* no_verify=1 uses none: a bad one is refused all the same */
	refused("qemu+ssh://m/system?no_verify=1&known_hosts=/a%20b");
}

/* `sh -c LINE` (sshd runs the line so), its stdout into *out. */
static int
sh_run(const char *line, char **out, size_t *len)
{
	int p[2], st;
	size_t cap = 4096;
	ssize_t n;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		if (chdir("/nonexistent-bureau-test") != 0 && chdir("/") != 0)
			_exit(126);
		execl("/bin/sh", "sh", "-c", line, (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0);
	close(p[1]);
	*out = malloc(cap);
	*len = 0;
	while ((n = read(p[0], *out + *len, cap - *len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n > 0);
		*len += (size_t)n;
		if (*len == cap)
			assert_non_null(*out = realloc(*out, cap *= 2));
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0)
		assert_int_equal(errno, EINTR);
	return (WIFEXITED(st) ? WEXITSTATUS(st) : 128);
}

/* The libvirt URI there is a word of the remote shell's line (`bureau
 * host probe URI`, `bureau host add NAME URI`): whatever the path holds
 * reaches that shell's command as it was. */
static void
ruri_through_shell(const char *uri, const char *want)
{
	struct remote r;
	char *w[4], *line, *out;
	size_t len, n;

	if (parse(uri, &r) != 0)
		fail_msg("'%s' was refused", uri);
	same("libvirt URI there", r.ruri, want);
	w[0] = "host";
	w[1] = "add";
	w[2] = "far";
	w[3] = r.ruri;
	line = sh_line("printf '%s\\0'", w, 4);
	assert_non_null(line);
	assert_int_equal(sh_run(line, &out, &len), 0);
	n = strlen(want);
	if (len != 13 + n + 1 || memcmp(out, "host\0add\0far\0", 13) != 0 ||
	    memcmp(out + 13, want, n + 1) != 0)
		fail_msg("'%s': the shell got another line", uri);
	free(out);
	free(line);
	remote_clear(&r);
}

static void
test_ruri_shell(void **state)
{
	(void)state;
	ruri_through_shell("qemu+ssh://m/system", "qemu:///system");
	ruri_through_shell("qemu+ssh://m/system;touch /tmp/bureau-pwned",
	    "qemu:///system;touch /tmp/bureau-pwned");
	ruri_through_shell("qemu+ssh://m/sys'$(id)'`id`",
	    "qemu:///sys'$(id)'`id`");
	ruri_through_shell("qemu+ssh://m/a b\n|c&*", "qemu:///a b\n|c&*");
	/* not decoded: libvirt there reads its own %XX */
	ruri_through_shell("qemu+ssh://m/a%20b%27", "qemu:///a%20b%27");
	assert_int_equal(access("/tmp/bureau-pwned", F_OK), -1);
}

/* ssh -G with the arguments cli/remote.c's ssh_base makes of uri (the
 * options that come from it, in its order), no configuration file: what
 * ssh would use, printed. Its exit status; its output in *out. */
static int
ssh_g(const struct remote *r, char **out)
{
	char *av[32], *kh = NULL;
	int n = 0, p[2], st;
	size_t len = 0, cap = 65536;
	ssize_t k;
	pid_t pid;

	av[n++] = "ssh";
	av[n++] = "-G";
	av[n++] = "-F";
	av[n++] = "/dev/null";
	if (r->port != NULL) {
		av[n++] = "-p";
		av[n++] = r->port;
	}
	if (r->user != NULL) {
		av[n++] = "-l";
		av[n++] = r->user;
	}
	if (r->keyfile != NULL) {
		av[n++] = "-i";
		av[n++] = r->keyfile;
		av[n++] = "-oIdentitiesOnly=yes";
	}
	if (r->known_hosts != NULL) {
		av[n++] = kh = hb_fmt("-oUserKnownHostsFile=%s",
		    r->known_hosts);
		av[n++] = "-oStrictHostKeyChecking=yes";
	}
	av[n++] = "--";
	av[n++] = r->machine;
	av[n] = NULL;
	assert_int_equal(pipe(p), 0);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		int nul = open("/dev/null", O_RDWR);

		dup2(nul, 0);
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		execvp("ssh", av);
		_exit(127);
	}
	close(p[1]);
	*out = malloc(cap);
	while ((k = read(p[0], *out + len, cap - len - 1)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		assert_true(k > 0);
		len += (size_t)k;
		assert_true(len < cap - 1);
	}
	(*out)[len] = '\0';
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0)
		assert_int_equal(errno, EINTR);
	free(kh);
	return (WIFEXITED(st) ? WEXITSTATUS(st) : 128);
}

/* ssh -G's line "key value" for key, or NULL. */
static const char *
g_line(const char *out, const char *key, char *buf, size_t size)
{
	size_t kl = strlen(key);

	for (const char *l = out; l != NULL && *l;
	     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, key, kl) == 0 && l[kl] == ' ') {
			snprintf(buf, size, "%.*s",
			    (int)strcspn(l + kl + 1, "\n"), l + kl + 1);
			return (buf);
		}
	return (NULL);
}

static void
test_ssh_reads(void **state)
{
	struct remote r;
	char *out, buf[4096];
	char tmpl[] = "/tmp/bureau-hosturi.XXXXXX";
	char *key, *uri;
	int fd;

	(void)state;
	if (system("command -v ssh >/dev/null 2>&1") != 0)
		skip();
	/* what ssh makes of a URI's parts: that machine, user, port, key
	 * file (one with a blank in its name, an existing one: ssh lists
	 * only those) and known hosts file, nothing else */
	assert_non_null(mkdtemp(tmpl));
	key = hb_fmt("%s/my key", tmpl);
	assert_true((fd = open(key, O_CREAT | O_WRONLY, 0600)) >= 0);
	close(fd);
	uri = hb_fmt("qemu+ssh://alice@m.example.org:2222/system?keyfile="
	             "%s/my%%20key&known_hosts=/etc/bureau/kh",
	    tmpl);
	assert_int_equal(parse(uri, &r), 0);
	assert_int_equal(ssh_g(&r, &out), 0);
	same("hostname", g_line(out, "hostname", buf, sizeof buf),
	    "m.example.org");
	same("user", g_line(out, "user", buf, sizeof buf), "alice");
	same("port", g_line(out, "port", buf, sizeof buf), "2222");
	same("identityfile", g_line(out, "identityfile", buf, sizeof buf), key);
	same("userknownhostsfile",
	    g_line(out, "userknownhostsfile", buf, sizeof buf),
	    "/etc/bureau/kh");
	same("stricthostkeychecking",
	    g_line(out, "stricthostkeychecking", buf, sizeof buf), "true");
	same("proxycommand", g_line(out, "proxycommand", buf, sizeof buf),
	    NULL);
	free(out);
	remote_clear(&r);
	free(uri);
	/* a user that looks like an option is -l's value: ssh takes it as
	 * a user (or refuses it as one), never as its option */
	assert_int_equal(parse("qemu+ssh://-oProxyCommand=touch%20%2Ftmp%2F"
	                       "bureau-pwned@m/system",
	                     &r),
	    0);
	if (ssh_g(&r, &out) == 0) {
		same("user", g_line(out, "user", buf, sizeof buf),
		    "-oProxyCommand=touch /tmp/bureau-pwned");
		same("proxycommand",
		    g_line(out, "proxycommand", buf, sizeof buf), NULL);
	} else
		assert_non_null(strstr(out, "user"));
	free(out);
	remote_clear(&r);
	/* the ports ssh refuses that the parser leaves it */
	assert_int_equal(parse("qemu+ssh://m:0/system", &r), 0);
	assert_int_not_equal(ssh_g(&r, &out), 0);
	assert_non_null(strstr(out, "Bad port"));
	free(out);
	remote_clear(&r);
	assert_int_equal(parse("qemu+ssh://m:65536/system", &r), 0);
	assert_int_not_equal(ssh_g(&r, &out), 0);
	assert_non_null(strstr(out, "Bad port"));
	free(out);
	remote_clear(&r);
	assert_int_equal(access("/tmp/bureau-pwned", F_OK), -1);
	unlink(key);
	rmdir(tmpl);
	free(key);
}

static int
valid_host(const char *name)
{
	char *cause = NULL;
	int rv = host_valid_name(name, &cause);

	if (rv != 0) {
		assert_non_null(cause);
		assert_non_null(strstr(cause, name));
		free(cause);
	} else
		assert_null(cause);
	return (rv == 0);
}

static void
test_host_names(void **state)
{
	char n64[65], n65[66];

	(void)state;
	memset(n64, 'h', 64);
	n64[64] = '\0';
	memset(n65, 'h', 65);
	n65[65] = '\0';
	assert_true(valid_host("far"));
	assert_true(valid_host("Far_2.example"));
	assert_true(valid_host("a-"));
	assert_true(valid_host(n64));
	assert_false(valid_host(n65));
	assert_false(valid_host(""));
	assert_false(valid_host("-far"));
	assert_false(valid_host("--far"));
	assert_false(valid_host(".far"));
	assert_false(valid_host(".."));
	assert_false(valid_host("a/b"));
	assert_false(valid_host("a b"));
	assert_false(valid_host("a;b"));
	assert_false(valid_host("a'b"));
	assert_false(valid_host("a\nb"));
	assert_false(valid_host("$(id)"));
	assert_false(valid_host("é"));
	assert_false(valid_host("a:b"));
	assert_false(valid_host("a@b"));
	assert_true(host_is_local(NULL));
	assert_true(host_is_local("local"));
	assert_false(host_is_local("Local"));
	assert_false(host_is_local("far"));
}

static void
test_host_here(void **state)
{
	(void)state;
	/* a unix socket of this machine's libvirt, or localhost */
	assert_true(host_here(NULL));
	assert_true(host_here("qemu:///system"));
	assert_true(host_here("qemu:///session"));
	assert_true(host_here("qemu+unix:///system"));
	assert_true(host_here("qemu+ssh:///system"));
	assert_true(host_here("qemu+ssh://localhost/system"));
	/* anything naming a machine is another machine's, for bureau there
	 * (remote_parse) */
	assert_false(host_here("qemu+ssh://m/system"));
	assert_false(host_here("qemu+ssh://alice@localhost/system"));
	assert_false(host_here("qemu+ssh://localhost:22/system"));
	assert_false(host_here("qemu+ssh://localhostx/system"));
	assert_false(host_here("qemu+ssh://127.0.0.1/system"));
	assert_false(host_here("qemu+tcp://m/system"));
	assert_false(host_here("qemu"));
	assert_false(host_here(""));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_not_ssh),
		cmocka_unit_test(test_shape),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_dash),
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_known_hosts_one_file),
		cmocka_unit_test(test_ruri_shell),
		cmocka_unit_test(test_ssh_reads),
		cmocka_unit_test(test_host_names),
		cmocka_unit_test(test_host_here),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
