/*
 * host-bridge/store/hosturi: the URI of a host on another machine,
 * qemu+ssh://[USER@]MACHINE[:PORT]/PATH[?keyfile=K&known_hosts=F&
 * no_verify=1] (cli/remote.h says what bureau does with it), taken apart
 * into what ssh is given: the machine (never starting with '-': it
 * follows "--" on ssh's command line all the same), the user (-l), the
 * port (-p, digits), the key file (-i), the known hosts file
 * (-oUserKnownHostsFile=) and the libvirt URI of the same host there
 * (qemu://PATH). USER, MACHINE and the parameters' values are
 * %XX-decoded, as libvirt decodes them; other parameters are libvirt's
 * and ignored here. The known hosts file is one word of ssh's option
 * syntax (no blank, quote, backslash or control character, no '#'
 * first): ssh would read another as other files, or as none.
 */
#ifndef BUREAU_HB_HOSTURI_H
#define BUREAU_HB_HOSTURI_H

/* A host on another machine, from its URI. */
struct remote {
	char *machine;     /* the SSH server: a name or an address */
	char *user, *port; /* or NULL */
	char *keyfile, *known_hosts;
	int no_verify;
	char *ruri; /* the same libvirt, there: qemu:///system */
};

/* uri into *r (its strings malloc'd; remote_clear frees them): 0, or -1
 * with *cause (not qemu+ssh://, or not of that form) and *r cleared. */
int remote_parse(const char *uri, struct remote *r, char **cause);
void remote_clear(struct remote *r);

#endif
