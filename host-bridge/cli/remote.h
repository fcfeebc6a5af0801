/*
 * host-bridge/cli/remote.c: desktops on a host on another machine (DESIGN.md,
 * "Hosts: desktops on libvirt"), a libvirt host whose URI is
 * qemu+ssh://[USER@]MACHINE[:PORT]/system[?keyfile=K&known_hosts=F].
 *
 * bureau is installed on MACHINE too, and a desktop there is that bureau's:
 * its disks, its VM (a domain of MACHINE's libvirt, qemu:///system there)
 * and its host agent, the only path to its guest, all on MACHINE. This
 * machine keeps a record of it (desktop.json with "remote": the directory
 * and agent port there, its token, its endpoint here) and:
 *   - sends every command that changes it to MACHINE over SSH (`bureau
 *     CMD ...` run there, its output passed through);
 *   - keeps SSH forwards (`bureau remote-forward NAME`, a keeper process
 *     that redials): 127.0.0.1:PORT and PORT+1 here to the agent's
 *     endpoint and events there, DIR/operator.sock here to its operator
 *     socket there. Agent loops use the endpoint here as any other;
 *     Mission Control and the operator commands the socket.
 * SSH, not nng's TLS: the operators of libvirt over qemu+ssh have SSH keys
 * and known hosts for these machines already; TLS would need a certificate
 * authority of bureau's own and a third port open on every host.
 */
#ifndef BUREAU_CLI_REMOTE_H
#define BUREAU_CLI_REMOTE_H

/* Is host (a name of hosts.json) on another machine? 1 yes, 0 no (local,
 * or a libvirt URI of this machine), -1 with *cause (no such host, or a
 * URI bureau cannot reach a bureau through: not qemu+ssh). */
int remote_host(const char *host, char **cause);

/* A host on another machine, asked of the bureau there (`bureau host
 * probe`, over SSH: its libvirt is reached from there, never from here):
 * its free memory and (version not NULL) that bureau's version
 * (malloc'd); -1 with *cause when it cannot be reached. */
int remote_probe(const char *uri, long long *free_bytes, char **version,
    char **cause);

/* `bureau create ... --host HOST` where HOST is on another machine: argv
 * as the command got it (argv[0] "create"), name the desktop's. */
int remote_create(int argc, char **argv, const char *host, const char *name);

/* A command naming a desktop on another machine: sent there, or refused
 * (fork, move), or its forwards made sure of (the client commands): 1 with
 * *rc when handled, 0 when the command goes on here. */
int remote_dispatch(int argc, char **argv, int *rc);

/* Start the keeper of d's SSH forwards (d on another machine) unless one
 * runs; it goes on in the background. 0, or -1 with *cause. */
struct desktop;
int remote_forward_launch(const struct desktop *d, char **cause);

/* The lifecycle library's transport to a desktop there whose agent does
 * not answer (desk_set_remote's). */
int remote_desk_run(const struct desktop *d, char *const *words, int n,
    char **said);

/* Every desktop on another machine: its forwards' keeper started unless
 * one runs (start --all); errors said on stderr. */
void remote_forwards_all(void);

/* `bureau move NAME --to HOST` where NAME or HOST is on another machine:
 * the stopped desktop d (locked by the caller) carried over SSH; what it
 * leaves is removed once it arrived. 0, or -1 with *cause (it stays
 * where it was). */
int remote_move(const struct desktop *d, const char *to, char **cause);

/* `bureau send NAME` (a stopped desktop's directory, a tar stream on
 * stdout) and `bureau receive NAME --host HOST` (one from stdin): the two
 * ends of a move between machines. */
int cmd_send(int argc, char **argv);
int cmd_receive(int argc, char **argv);

/* `bureau remote-forward NAME`: the keeper of a remote desktop's SSH
 * forwards (started by create and by the commands that need them). */
int cmd_remote_forward(int argc, char **argv);

#endif
