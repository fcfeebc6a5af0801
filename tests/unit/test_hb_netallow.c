/*
 * Unit tests: `--net-allow LIST` (host-bridge/vm/netrules.c), the
 * exceptions a desktop's guest may reach past --net internet's blocks,
 * as the nftables rules its network namespace loads. LIST comes from the
 * command line and from a desktop received from another machine
 * (remote.c's recv_config checks it with resolve 0); its items go into
 * the rules text. So: what is refused, what is taken, and that nothing
 * of an item but an address inet_pton reads, inet_ntop's own text and
 * numbers reaches the rules. No name is resolved here: resolve 1 is
 * given numeric addresses only (getaddrinfo reads "127.1" and the like
 * as numbers, asking no resolver), never a name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-bridge/store/store.h"
#include "host-bridge/util/util.h"
#include "host-bridge/vm/qemu_int.h"
#include "host-bridge/vm/vm.h"

/* list checked, no name resolved: 0 or -1 (then a cause naming the
 * option). */
static int
check(const char *list)
{
	char *cause = NULL, *rules = NULL;
	int rv = net_allow_check(list, 0, &rules, &cause);

	if (rv != 0) {
		assert_int_equal(rv, -1);
		assert_non_null(cause);
		assert_non_null(strstr(cause, "--net-allow"));
		free(cause);
	} else
		assert_null(cause);
	/* without resolving there are no rules to make */
	if (rules != NULL)
		assert_string_equal(rules, "");
	free(rules);
	/* the same without rules asked for */
	assert_int_equal(net_allow_check(list, 0, NULL, &cause), rv);
	free(cause);
	return (rv);
}

static void
ok(const char *list)
{
	if (check(list) != 0)
		fail_msg("--net-allow '%s' was refused",
		    list ? list : "(none)");
}

static void
bad(const char *list)
{
	if (check(list) != -1)
		fail_msg("--net-allow '%s' was taken", list ? list : "(none)");
}

/*
 * Every line of rules is one of
 *	\t\tip daddr A accept
 *	\t\tip daddr A/N accept
 *	\t\tip daddr A meta l4proto { tcp, udp } th dport P accept
 * with A an IPv4 address exactly as inet_ntop writes it, N 0-32 and P
 * 1-65535 as %ld writes them: nothing else of an item can be in it.
 */
static void
assert_rules_shape(const char *rules)
{
	const char *l = rules;

	while (*l != '\0') {
		const char *nl = strchr(l, '\n'), *p;
		char addr[64], canon[INET_ADDRSTRLEN], tail[128];
		struct in_addr in;
		size_t n;

		assert_non_null(nl);
		assert_true(strncmp(l, "\t\tip daddr ", 11) == 0);
		p = l + 11;
		n = strspn(p, "0123456789.");
		assert_true(n > 0 && n < sizeof addr);
		memcpy(addr, p, n);
		addr[n] = '\0';
		assert_int_equal(inet_pton(AF_INET, addr, &in), 1);
		assert_non_null(inet_ntop(AF_INET, &in, canon, sizeof canon));
		assert_string_equal(addr, canon);
		p += n;
		assert_true((size_t)(nl - p) < sizeof tail);
		memcpy(tail, p, (size_t)(nl - p));
		tail[nl - p] = '\0';
		if (tail[0] == '/') {
			char *end;
			long bits = strtol(tail + 1, &end, 10);
			char want[64];

			snprintf(want, sizeof want, "/%ld accept", bits);
			assert_true(bits >= 0 && bits <= 32);
			assert_string_equal(tail, want);
		} else if (strcmp(tail, " accept") != 0) {
			long port = -1;
			char want[128];

			assert_int_equal(sscanf(tail,
			                     " meta l4proto { tcp, udp } th "
			                     "dport %ld accept",
			                     &port),
			    1);
			snprintf(want, sizeof want,
			    " meta l4proto { tcp, udp } th dport %ld accept",
			    port);
			assert_string_equal(tail, want);
			assert_true(port >= 1 && port <= 65535);
		}
		l = nl + 1;
	}
}

/* list's rules, numeric addresses only (resolve 1): exactly want. */
static void
rules_are(const char *list, const char *want)
{
	char *cause = NULL, *rules = NULL;

	if (net_allow_check(list, 1, &rules, &cause) != 0)
		fail_msg("--net-allow '%s' was refused: %s", list, cause);
	assert_null(cause);
	assert_non_null(rules);
	assert_rules_shape(rules);
	if (strcmp(rules, want) != 0)
		fail_msg("--net-allow '%s' made:\n%s\nnot:\n%s", list, rules,
		    want);
	free(rules);
}

/* list refused with resolve 1 too (no rules of it used). */
static void
rules_refused(const char *list)
{
	char *cause = NULL, *rules = NULL;

	if (net_allow_check(list, 1, &rules, &cause) != -1)
		fail_msg("--net-allow '%s' made rules:\n%s", list,
		    rules ? rules : "");
	assert_non_null(cause);
	free(cause);
	/* what an item before the bad one made is well formed all the
	 * same (the caller drops it: net_rules_write writes nothing) */
	if (rules != NULL)
		assert_rules_shape(rules);
	free(rules);
}

#define A(x) "\t\tip daddr " x " accept\n"
#define P(x, p)                                                                \
	"\t\tip daddr " x " meta l4proto { tcp, udp } th dport " p " accept\n"

static void
test_cidrs(void **state)
{
	(void)state;
	ok("203.0.113.0/24");
	ok("203.0.113.7/32");
	ok("10.0.0.0/8");
	ok("0.0.0.0/0");
	ok("203.0.113.77/24");
	bad("203.0.113.0/33");
	bad("203.0.113.0/-1");
	bad("203.0.113.0/");
	bad("203.0.113.0/x");
	bad("203.0.113.0/24x");
	bad("203.0.113.0/24/8");
	bad("203.0.113/24");
	bad("203.0.113.256/24");
	bad("/24");
	bad("example.com/24");
	bad("203.0.113.0/24:443");
	bad("203.0.113.0/99999999999999999999");
	/* IPv4 only: the guest has no IPv6 (passt -4) */
	bad("2001:db8::/32");
	bad("::/0");
	/* the network's own address, whatever host bits were given */
	rules_are("203.0.113.77/24", A("203.0.113.0/24"));
	rules_are("10.1.2.3/8", A("10.0.0.0/8"));
	rules_are("203.0.113.7/32", A("203.0.113.7/32"));
	rules_are("192.0.2.255/31", A("192.0.2.254/31"));
	rules_are("255.255.255.255/1", A("128.0.0.0/1"));
	/* /0: every address, the blocked ranges and the host's own ones
	 * too (an exception comes before the blocks) */
	rules_are("0.0.0.0/0", A("0.0.0.0/0"));
	rules_are("198.51.100.1/0", A("0.0.0.0/0"));
	/* strtol's reading of the bits, printed anew: none of the text */
	rules_are("203.0.113.0/08", A("203.0.0.0/8"));
	rules_are("203.0.113.0/+8", A("203.0.0.0/8"));
	rules_are("203.0.113.0/ 24", A("203.0.113.0/24"));
}

static void
test_hosts_and_ports(void **state)
{
	char n255[256], n256[257];

	(void)state;
	ok("example.com");
	ok("api.example.com:443");
	ok("a-b.example:1");
	ok("x:65535");
	ok("203.0.113.7");
	ok("203.0.113.7:80");
	ok("localhost");
	ok("EXAMPLE.COM");
	ok("-x"); /* a name; it goes to getaddrinfo, never a command */
	bad("x:0");
	bad("x:65536");
	bad("x:-1");
	bad("x:");
	bad(":443");
	bad("x:abc");
	bad("x:80x");
	bad("x:99999999999999999999");
	bad("x:1:2");
	bad("x_y");
	bad("é.example");
	ok("x.example."); /* a fully qualified name's dot */
	/* IPv6, bracketed or not, with or without a port */
	bad("::1");
	bad("[::1]");
	bad("[::1]:443");
	bad("2001:db8::1");
	bad("fe80::1%eth0");
	/* an item of 255 bytes is looked at, one of 256 refused at once */
	memset(n255, 'a', 255);
	n255[255] = '\0';
	memset(n256, 'a', 256);
	n256[256] = '\0';
	ok(n255);
	bad(n256);
	rules_are("203.0.113.7", A("203.0.113.7"));
	rules_are("203.0.113.7:443", P("203.0.113.7", "443"));
	rules_are("203.0.113.7:1", P("203.0.113.7", "1"));
	rules_are("203.0.113.7:65535", P("203.0.113.7", "65535"));
	/* strtol's reading of the port, printed anew */
	rules_are("203.0.113.7:0443", P("203.0.113.7", "443"));
	rules_are("203.0.113.7:+443", P("203.0.113.7", "443"));
	/* numbers getaddrinfo reads as inet_aton does (no resolver asked):
	 * the address it means, as inet_ntop writes it. "010" is octal:
	 * 010.0.0.1 is 8.0.0.1, not 10.0.0.1 (which stays blocked) */
	rules_are("127.1", A("127.0.0.1"));
	rules_are("2130706433", A("127.0.0.1"));
	rules_are("0x7f.1:80", P("127.0.0.1", "80"));
	rules_are("010.0.0.1", A("8.0.0.1"));
}

static void
test_lists(void **state)
{
	char *many, *p;
	size_t n = 10000;

	(void)state;
	ok("");
	ok(NULL);
	ok(",");
	ok(",,,");
	ok(" ");
	ok("example.com, 203.0.113.0/24");
	ok("example.com,,203.0.113.0/24,");
	ok("  example.com,   example.org");
	ok("a, ,b");
	bad("example.com ,b");  /* a blank after an item */
	bad("example.com\t,b"); /* a tab is no blank skipped */
	bad("example.com;b");   /* ';' is not the separator */
	bad("a,b,c:0");         /* the last item */
	bad("\texample.com");
	bad("\nexample.com");
	rules_are("", "");
	rules_are(" , ,", "");
	rules_are("203.0.113.7, 198.51.100.0/24,203.0.113.8:22",
	    A("203.0.113.7") A("198.51.100.0/24") P("203.0.113.8", "22"));
	/* a long list: each item its rule */
	many = malloc(n * 16 + 1);
	assert_non_null(many);
	p = many;
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s192.0.2.%zu", i ? "," : "", i % 256);
	ok(many);
	{
		char *cause = NULL, *rules = NULL;
		size_t lines = 0;

		assert_int_equal(net_allow_check(many, 1, &rules, &cause), 0);
		assert_rules_shape(rules);
		for (const char *l = rules; (l = strchr(l, '\n')) != NULL; l++)
			lines++;
		assert_int_equal(lines, n);
		free(rules);
	}
	free(many);
}

/* Attempts to write nft syntax through an item: each refused, with and
 * without resolving, and so never in any rules text. */
static void
test_injection(void **state)
{
	static const char *const tries[] = {
		"203.0.113.7 accept",
		"203.0.113.7 accept; flush ruleset",
		"203.0.113.7\n\t\tip daddr 0.0.0.0/0 accept",
		"203.0.113.7\n",
		"203.0.113.7\r",
		"203.0.113.7}",
		"203.0.113.7 }\n}\ntable inet x {",
		"203.0.113.0/24 accept",
		"203.0.113.0/24\naccept",
		"203.0.113.0/24;",
		"203.0.113.7:80 accept",
		"203.0.113.7:80\n",
		"203.0.113.7:80;",
		"example.com\"",
		"example.com'",
		"example.com;",
		"example.com{",
		"example.com#",
		"\"203.0.113.7\"",
		"$(id)",
		"`id`",
		"example.com\\",
		"203.0.113.7/24 }",
		"{ 0.0.0.0/0 }",
		"@set",
		"*",
		"0.0.0.0/0 counter",
		"example.com\x1b[2J",
	};

	(void)state;
	for (size_t i = 0; i < sizeof tries / sizeof *tries; i++) {
		bad(tries[i]);
		rules_refused(tries[i]);
		/* and after a good item */
		{
			char *l = hb_fmt("203.0.113.9,%s", tries[i]);

			bad(l);
			rules_refused(l);
			free(l);
		}
	}
	/* a newline at the start of an item is no blank skipped */
	bad("203.0.113.7,\n0.0.0.0/0");
	rules_refused("203.0.113.7,\n0.0.0.0/0");
}

/*
 * The whole file net_rules_write writes for a desktop (DIR/net.nft, what
 * its network keeper loads): the exceptions, each its rule, after the
 * DNS one and before the blocks; a LIST refused writes nothing.
 */
static void
test_rules_file(void **state)
{
	char tmpl[] = "/tmp/bureau-netallow.XXXXXX";
	struct desktop d = { 0 };
	char *cause = NULL, *path, *text, *allow, *blocks;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	d.dir = tmpl;
	path = hb_fmt("%s/net.nft", tmpl);
	d.net_allow = "203.0.113.7:443, 198.51.100.0/24";
	assert_int_equal(net_rules_write(&d, &cause), 0);
	assert_non_null(text = hb_read_file(path));
	allow = strstr(text, A("198.51.100.0/24"));
	assert_non_null(allow);
	assert_non_null(
	    strstr(text, P("203.0.113.7", "443") A("198.51.100.0/24")));
	assert_non_null(
	    strstr(text, "th dport 53 accept\n" P("203.0.113.7", "443")));
	blocks = strstr(text, "10.0.0.0/8");
	assert_non_null(blocks);
	assert_true(allow < blocks);
	assert_non_null(strstr(text, "169.254.0.0/16"));
	assert_non_null(strstr(text, "meta nfproto ipv6 reject"));
	free(text);
	/* refused: no file */
	assert_int_equal(unlink(path), 0);
	d.net_allow = "203.0.113.7\n\t\tip daddr 0.0.0.0/0 accept";
	assert_int_equal(net_rules_write(&d, &cause), -1);
	assert_non_null(cause);
	free(cause);
	cause = NULL;
	assert_int_equal(access(path, F_OK), -1);
	/* --net none: nothing but loopback, whatever the list */
	d.net_none = 1;
	assert_int_equal(net_rules_write(&d, &cause), 0);
	assert_non_null(text = hb_read_file(path));
	assert_null(strstr(text, "0.0.0.0/0"));
	assert_null(strstr(text, "ip daddr"));
	assert_non_null(strstr(text, "oif \"lo\" accept\n\t\treject\n"));
	free(text);
	/* --net-rate: policed both ways, after loopback and before the
	 * exceptions; with --net none there is nothing to police */
	d.net_rate = 1048576;
	assert_int_equal(net_rules_write(&d, &cause), 0);
	assert_non_null(text = hb_read_file(path));
	assert_null(strstr(text, "limit rate"));
	free(text);
	d.net_none = 0;
	d.net_allow = NULL;
	assert_int_equal(net_rules_write(&d, &cause), 0);
	assert_non_null(text = hb_read_file(path));
	allow = strstr(text,
	    "oif \"lo\" accept\n\t\tlimit rate over 1048576 "
	    "bytes/second burst 1048576 bytes drop\n");
	assert_non_null(allow);
	assert_true(allow < strstr(text, "th dport 53 accept"));
	assert_non_null(strstr(text,
	    "\tchain in {\n\t\ttype filter hook input priority 0; policy "
	    "accept;\n\t\tiif \"lo\" accept\n\t\tlimit rate over 1048576 "
	    "bytes/second burst 1048576 bytes drop\n\t}\n}\n"));
	free(text);
	/* a small rate: the burst is 64 KiB at least */
	d.net_rate = 1000;
	assert_int_equal(net_rules_write(&d, &cause), 0);
	assert_non_null(text = hb_read_file(path));
	assert_non_null(strstr(text,
	    "limit rate over 1000 bytes/second burst 65536 bytes drop"));
	free(text);
	unlink(path);
	rmdir(tmpl);
	free(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cidrs),
		cmocka_unit_test(test_hosts_and_ports),
		cmocka_unit_test(test_lists),
		cmocka_unit_test(test_injection),
		cmocka_unit_test(test_rules_file),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
