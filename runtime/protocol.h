/*
 * runtime/protocol.h: what only the daemon needs of the wire protocol. The
 * version, the error codes and the limits live in common/bureau_protocol.h,
 * shared with the host side and libbureau;
 * docs/protocol.md describes them for clients.
 */
#ifndef BUREAU_RUNTIME_PROTOCOL_H
#define BUREAU_RUNTIME_PROTOCOL_H

#include "common/bureau_protocol.h"

#define BD_PROTOCOL_VERSION BUREAU_PROTOCOL
/* Default and largest request accepted (bytes); --max-request changes it. */
#define BD_MAX_REQUEST_DEFAULT BUREAU_MAX_REQUEST

/* The wire name of an error code ("invalid_argument"; "internal" for a
 * number that is none). */
const char *bd_err_name(int err);

/* Default ports and socket name. */
#define BD_DEFAULT_TCP BUREAU_DEFAULT_URL
#define BD_SOCKET_NAME "bureau/bureaud.sock"

/* The QEMU fw_cfg entry that carries a desktop's token. */
#define BD_FWCFG_TOKEN "/sys/firmware/qemu_fw_cfg/by_name/opt/bureau/token/raw"

#endif
