/*
 * bureau wire protocol v1: its version, its error codes and its limits, in
 * the one header both sides build from (as tmux-protocol.h is): bureaud
 * (runtime/, tools/), the host side (host-bridge/) and libbureau (bureau.h
 * includes it, and it is installed beside bureau.h). docs/protocol.md
 * describes the protocol for clients; the Python and JavaScript bindings
 * keep their own lists, checked against this file by
 * tests/integration/test_protocol_header.py.
 *
 * Plain C preprocessor definitions only: no types, no functions, so an
 * installed copy beside bureau.h needs nothing else.
 */
#ifndef BUREAU_PROTOCOL_H
#define BUREAU_PROTOCOL_H

#define BUREAU_PROTOCOL 1

/* Where bureaud listens by default (events on the port + 1). */
#define BUREAU_DEFAULT_URL "tcp://127.0.0.1:7300"

/* bureaud's default largest request (--max-request), in bytes: nng drops
 * a larger message and closes that connection. */
#define BUREAU_MAX_REQUEST (64u << 20)

/* The most nested arrays and objects, and the most JSON values (scalars,
 * arrays and objects), in one request: bounds on the tree a request makes
 * the daemon build (jansson spends about 230 bytes on an empty object:
 * a request of 131072 of them raised bureaud's peak RSS by 29 MB, where
 * 8 MB of them, unbounded, took 640 MB). Far above any real request: a
 * 64 MiB base64 "data" string is one value. A request over them gets
 * `bad_request` (depth) or `too_large` (values), naming the limit. */
#define BUREAU_MAX_DEPTH  128
#define BUREAU_MAX_VALUES (1 << 17)

/*
 * The protocol's error codes, in the order of docs/protocol.md:
 * X(number, suffix, wire name). bureaud's codes are BD_<suffix> = number,
 * libbureau's are BUREAU_<suffix> = -number; the numbers never change (they
 * are libbureau's ABI). 14 and 20 to 31 are libbureau's own codes
 * (bureau.h): a new protocol code takes 15 to 19, then 32 on.
 */
#define BUREAU_PROTOCOL_ERRORS(X)                                              \
	X(1, EBADREQ, "bad_request")                                           \
	X(2, EUNAUTH, "unauthorized")                                          \
	X(3, EUNKNOWN_TOOL, "unknown_tool")                                    \
	X(4, EUNKNOWN_ACTION, "unknown_action")                                \
	X(5, EINVAL, "invalid_argument")                                       \
	X(6, EBOUNDS, "out_of_bounds")                                         \
	X(7, ETIMEOUT, "timeout")                                              \
	X(8, ENOTFOUND, "not_found")                                           \
	X(9, EPERM, "permission_denied")                                       \
	X(10, EIO, "io_error")                                                 \
	X(11, ETOOLARGE, "too_large")                                          \
	X(12, EBUSY, "busy")                                                   \
	X(13, EINTERNAL, "internal")                                           \
	X(15, ETAKEN_OVER, "taken_over")

/* The largest number BUREAU_PROTOCOL_ERRORS lists (14 is a gap). */
#define BUREAU_PROTOCOL_NERRORS 15

/* The BLAKE2b key that derives the events' encryption key from the token
 * (docs/protocol.md, "Encryption"). */
#define BUREAU_EVENTS_KEY_CONTEXT "bureau-events-v1"

#endif
