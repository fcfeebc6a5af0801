/*
 * host-bridge/vm/netrules.c: what a desktop's guest may reach, as the
 * nftables rules its own network namespace loads (netkeeper.c). They
 * filter passt's sockets, which carry everything the guest sends, so
 * nothing inside the VM can change them.
 *
 * --net internet: public addresses only. Refused (an ICMP or TCP reset,
 * so that the guest fails at once rather than time out): the host's own
 * addresses and gateways, loopback, link-local (169.254.0.0/16, where a
 * cloud's metadata service hands out credentials), private and shared
 * ranges (10/8, 172.16/12, 192.168/16, 100.64/10, and IPv6's fc00::/7,
 * fe80::/10), multicast and the reserved rest. --net-allow opens
 * exceptions (a CIDR, or HOST[:PORT] resolved at each start). DNS to any
 * address goes to the host's resolver through pasta's --dns-forward
 * (NET_DNS_ADDR), so a guest whose lease names an old resolver (a saved
 * desktop) or a private one still resolves, and a loopback resolver
 * (systemd-resolved's 127.0.0.53) works.
 * --net none: the namespace's loopback alone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-bridge/util/util.h"
#include "host-bridge/vm/qemu_int.h"

static const char *const net_blocked4[] = { "0.0.0.0/8", "10.0.0.0/8",
	"100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
	"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4",
	"240.0.0.0/4" };

/* Append s to the growing buffer *b (NULL once out of memory). */
static void
net_add(char **b, const char *s)
{
	char *n;

	if (*b == NULL)
		return;
	n = hb_fmt("%s%s", *b, s);
	free(*b);
	*b = n;
}

/* The host's own IPv4 addresses, each as an nft element, ", "-joined. */
static void
net_host_addrs(char **b)
{
	struct ifaddrs *ifa = NULL, *i;
	char a[INET_ADDRSTRLEN];

	if (getifaddrs(&ifa) != 0)
		return;
	for (i = ifa; i != NULL; i = i->ifa_next)
		if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET &&
		    inet_ntop(AF_INET,
		        &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a,
		        sizeof a) != NULL) {
			net_add(b, ", ");
			net_add(b, a);
		}
	freeifaddrs(ifa);
}

/* The host's IPv4 gateways (/proc/net/route), as above. */
static void
net_gateways(char **b)
{
	FILE *f = fopen("/proc/net/route", "re");
	char line[256], a[INET_ADDRSTRLEN];

	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		char ifn[32];
		unsigned int dst, gw;
		struct in_addr in;

		if (sscanf(line, "%31s %x %x", ifn, &dst, &gw) != 3 || gw == 0)
			continue;
		in.s_addr = gw; /* the kernel's byte order, as printed */
		if (inet_ntop(AF_INET, &in, a, sizeof a) != NULL) {
			net_add(b, ", ");
			net_add(b, a);
		}
	}
	fclose(f);
}

/* The rule that lets the guest reach addr (on port, TCP and UDP, when
 * port > 0). */
static void
net_rule(char **b, const char *addr, long port)
{
	char rule[160];

	if (port > 0)
		snprintf(rule, sizeof rule,
		    "\t\tip daddr %s meta l4proto { tcp, udp } th dport %ld "
		    "accept\n",
		    addr, port);
	else
		snprintf(rule, sizeof rule, "\t\tip daddr %s accept\n", addr);
	net_add(b, rule);
}

/* One --net-allow item as rules ("ip daddr X [tcp dport P] accept"). */
static int
net_allow_item(char **b, const char *item, int resolve, char **cause)
{
	char host[256], *colon, *slash, rule[512];
	const char *port = NULL;
	long bits = -1, pn = -1;
	struct in_addr in;

	if (strlen(item) >= sizeof host) {
		*cause = hb_fmt("--net-allow: '%.40s...' is too long", item);
		return (-1);
	}
	strcpy(host, item);
	if ((slash = strchr(host, '/')) != NULL) {
		char *end;

		*slash = '\0';
		errno = 0;
		bits = strtol(slash + 1, &end, 10);
		if (*end != '\0' || slash[1] == '\0' || bits < 0 || bits > 32 ||
		    inet_pton(AF_INET, host, &in) != 1) {
			*cause = hb_fmt("--net-allow: '%s' is not an IPv4 CIDR "
			                "(like 203.0.113.0/24)",
			    item);
			return (-1);
		}
	} else if ((colon = strrchr(host, ':')) != NULL) {
		char *end;

		*colon = '\0';
		port = colon + 1;
		pn = strtol(port, &end, 10);
		if (*end != '\0' || *port == '\0' || pn < 1 || pn > 65535) {
			*cause = hb_fmt("--net-allow: '%s': the port must be "
			                "1-65535",
			    item);
			return (-1);
		}
	}
	if (host[0] == '\0' ||
	    strspn(host,
	        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	        "0123456789.-") != strlen(host)) {
		*cause = hb_fmt(
		    "--net-allow: '%s' is not a CIDR or HOST[:PORT]", item);
		return (-1);
	}
	if (!resolve)
		return (0);
	if (inet_pton(AF_INET, host, &in) == 1) {
		if (bits >= 0) {
			/* the network's own address: nft wants no host bits */
			uint32_t m = bits ? htonl(~0u << (32 - bits)) : 0;
			char a[INET_ADDRSTRLEN];

			in.s_addr &= m;
			inet_ntop(AF_INET, &in, a, sizeof a);
			snprintf(rule, sizeof rule,
			    "\t\tip daddr %s/%ld accept\n", a, bits);
			net_add(b, rule);
		} else
			net_rule(b, host, pn);
		return (0);
	}
	/* A name: every IPv4 address it has now. */
	struct addrinfo hints = { .ai_family = AF_INET,
		.ai_socktype = SOCK_STREAM },
	                *res = NULL, *r;
	int e = getaddrinfo(host, NULL, &hints, &res), n = 0;

	if (e != 0) {
		*cause = hb_fmt("--net-allow: cannot resolve '%s': %s", host,
		    gai_strerror(e));
		return (-1);
	}
	for (r = res; r != NULL; r = r->ai_next) {
		char a[INET_ADDRSTRLEN];

		if (inet_ntop(AF_INET,
		        &((struct sockaddr_in *)r->ai_addr)->sin_addr, a,
		        sizeof a) == NULL)
			continue;
		net_rule(b, a, pn);
		n++;
	}
	freeaddrinfo(res);
	if (n == 0)
		*cause = hb_fmt("--net-allow: '%s' has no IPv4 address", host);
	return (n > 0 ? 0 : -1);
}

int
net_allow_check(const char *list, int resolve, char **rules, char **cause)
{
	char *copy = strdup(list ? list : ""), *save = NULL, *it;
	char *discard = NULL;
	int rv = 0;

	if (rules != NULL)
		*rules = strdup("");
	if (copy == NULL || (rules != NULL && *rules == NULL)) {
		free(copy);
		*cause = hb_fmt("out of memory");
		return (-1);
	}
	for (it = strtok_r(copy, ",", &save); it != NULL && rv == 0;
	     it = strtok_r(NULL, ",", &save)) {
		while (*it == ' ')
			it++;
		if (*it == '\0')
			continue;
		rv = net_allow_item(rules ? rules : &discard, it, resolve,
		    cause);
	}
	free(copy);
	return (rv);
}

/*
 * --net-rate: what the guest sends and receives, each way, policed in its
 * namespace (its traffic leaves and enters it as passt's own sockets):
 * packets over the rate, after a burst of one second's worth (64 KiB at
 * least), are dropped, and TCP slows to the rate. Measured in
 * test_guest_net.sh: 4 MiB at 1M in 3.96 s; with a quarter second's
 * burst TCP backed off to half the rate (8.9 s). Into *b: the rule (the
 * out chain's), or with in the input chain that holds it too.
 */
static void
net_rate_rules(char **b, long long rate, int in)
{
	char line[160];
	long long burst = rate > 65536 ? rate : 65536;

	snprintf(line, sizeof line,
	    "\t\tlimit rate over %lld bytes/second burst %lld bytes drop\n",
	    rate, burst);
	if (in)
		net_add(b,
		    "\tchain in {\n"
		    "\t\ttype filter hook input priority 0; policy "
		    "accept;\n"
		    "\t\tiif \"lo\" accept\n");
	net_add(b, line);
	if (in)
		net_add(b, "\t}\n");
}

int
net_rules_write(const struct desktop *d, char **cause)
{
	char *b = strdup("# written by bureau at each start (netrules.c)\n"
	                 "flush ruleset\n"),
	     *allow = NULL, *path = desktop_path(d, "net.nft");
	char *own = strdup("");
	int rv = -1;

	if (!d->net_none &&
	    net_allow_check(d->net_allow, 1, &allow, cause) != 0)
		goto out;
	net_add(&b, "table inet bureau {\n");
	if (!d->net_none) {
		/* DNS, to whatever address: the host's resolver */
		net_add(&b,
		    "\tchain dns {\n"
		    "\t\ttype nat hook output priority -100; policy "
		    "accept;\n"
		    "\t\toif \"lo\" return\n"
		    "\t\tmeta l4proto { tcp, udp } th dport 53 dnat ip "
		    "to " NET_DNS_ADDR "\n"
		    "\t}\n");
	}
	net_add(&b,
	    "\tchain out {\n"
	    "\t\ttype filter hook output priority 0; policy accept;\n"
	    /* the namespace itself: passt's forward, the relay */
	    "\t\toif \"lo\" accept\n");
	if (!d->net_none && d->net_rate > 0)
		net_rate_rules(&b, d->net_rate, 0);
	if (d->net_none) {
		net_add(&b, "\t\treject\n\t}\n}\n");
		goto write;
	}
	net_add(&b,
	    "\t\tip daddr " NET_DNS_ADDR
	    " meta l4proto { tcp, udp } th dport 53 accept\n");
	net_add(&b, allow);
	net_host_addrs(&own);
	net_gateways(&own);
	if (own != NULL && own[0] != '\0') {
		net_add(&b, "\t\tip daddr { ");
		net_add(&b, own + 2);
		net_add(&b, " } reject\n");
	}
	net_add(&b, "\t\tip daddr { ");
	for (size_t i = 0; i < sizeof net_blocked4 / sizeof *net_blocked4;
	     i++) {
		net_add(&b, i ? ", " : "");
		net_add(&b, net_blocked4[i]);
	}
	net_add(&b,
	    " } reject\n"
	    "\t\tip daddr 255.255.255.255 reject\n"
	    /* the guest has no IPv6 (passt -4): nothing of it out */
	    "\t\tmeta nfproto ipv6 reject\n"
	    "\t}\n");
	if (d->net_rate > 0)
		net_rate_rules(&b, d->net_rate, 1);
	net_add(&b, "}\n");
write:
	if (b == NULL || path == NULL) {
		*cause = hb_fmt("out of memory");
		goto out;
	}
	rv = hb_write_file(path, b, strlen(b), 0600, cause);
out:
	free(b);
	free(own);
	free(allow);
	free(path);
	return (rv);
}

pid_t
vm_net_keeper_pid(const struct desktop *d)
{
	char *p = desktop_path(d, "net.pid"), *s = p ? hb_read_file(p) : NULL;
	long pid = s ? strtol(s, NULL, 10) : 0;

	free(p);
	free(s);
	return (pid > 0 && pid < (1L << 30) ? (pid_t)pid : 0);
}

int
vm_net_reload(const struct desktop *d, char **cause)
{
	pid_t pid = vm_net_keeper_pid(d);

	if (pid == 0 || store_agent_pid(d) == 0)
		return (0);
	if (net_rules_write(d, cause) != 0)
		return (-1);
	if (kill(pid, SIGHUP) != 0 && errno != ESRCH) {
		*cause = hb_fmt("cannot signal the network keeper (pid %d): %s",
		    (int)pid, strerror(errno));
		return (-1);
	}
	return (0);
}

/*
 * The keeper dials the guest's daemon from its start, while a restored
 * guest still waits for its state: passt takes the connection and then
 * waits for the guest, and nng gives up on that handshake only after its
 * negotiation timeout (10 s), which a restore then waited for (measured:
 * restored in 0.3 s, the daemon answering 10 s later). SIGUSR1 has it
 * drop those dials and dial again.
 */
void
qemu_net_redial(const struct desktop *d)
{
	pid_t pid = vm_net_keeper_pid(d);

	if (pid > 0)
		kill(pid, SIGUSR1);
}
