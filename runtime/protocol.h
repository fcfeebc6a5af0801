/*
 * bureau wire protocol v1: the one place that names its version, its error
 * codes and its limits. docs/protocol.md describes it for clients.
 */
#ifndef BUREAU_PROTOCOL_H
#define BUREAU_PROTOCOL_H

#define BD_PROTOCOL_VERSION 1

/* Error codes, in the order of docs/protocol.md. 0 is success. */
enum bd_err {
	BD_OK = 0,
	BD_EBADREQ,        /* bad_request: not JSON, not an object, wrong types */
	BD_EUNAUTH,        /* unauthorized */
	BD_EUNKNOWN_TOOL,  /* unknown_tool */
	BD_EUNKNOWN_ACTION, /* unknown_action */
	BD_EINVAL,         /* invalid_argument */
	BD_EBOUNDS,        /* out_of_bounds */
	BD_ETIMEOUT,       /* timeout */
	BD_ENOTFOUND,      /* not_found */
	BD_EPERM,          /* permission_denied */
	BD_EIO,            /* io_error */
	BD_ETOOLARGE,      /* too_large */
	BD_EBUSY,          /* busy */
	BD_EINTERNAL,      /* internal */
	BD_NERR
};

/* The wire name of an error code ("invalid_argument"). */
const char *bd_err_name(enum bd_err err);

/* Default and largest request accepted (bytes); --max-request changes it. */
#define BD_MAX_REQUEST_DEFAULT (64u << 20)

/* The most nested arrays and objects, and the most JSON values, in one
 * request: bounds on the tree a request can make the daemon build (a
 * value costs jansson about 100 bytes). Far above any real request (a
 * 64 MiB base64 "data" string is one value). */
#define BD_REQUEST_DEPTH_MAX 128
#define BD_REQUEST_VALUES_MAX (1 << 17)

/* Default ports and socket name. */
#define BD_DEFAULT_TCP "tcp://127.0.0.1:7300"
#define BD_SOCKET_NAME "bureau/bureaud.sock"

/* The QEMU fw_cfg entry that carries a desktop's token. */
#define BD_FWCFG_TOKEN "/sys/firmware/qemu_fw_cfg/by_name/opt/bureau/token/raw"

#endif
