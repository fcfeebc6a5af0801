"""Errors raised by bureau: one class per protocol error code, plus the
transport errors. Every error carries ``.code`` (the protocol's name, such as
``"invalid_argument"``) and ``.message`` (the daemon's message verbatim when
the daemon answered) and ``.reply`` (the reply dict, or None)."""


class Error(Exception):
    """Base of every bureau error."""

    code = "error"

    def __init__(self, message, code=None, reply=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.reply = reply

    def __str__(self):
        return "%s: %s" % (self.code, self.message)


class DaemonError(Error):
    """The daemon answered ``ok: false``."""


class BadRequest(DaemonError):
    code = "bad_request"


class Unauthorized(DaemonError):
    code = "unauthorized"


class UnknownTool(DaemonError):
    code = "unknown_tool"


class UnknownAction(DaemonError):
    code = "unknown_action"


class InvalidArgument(DaemonError, ValueError):
    code = "invalid_argument"


class OutOfBounds(DaemonError, ValueError):
    code = "out_of_bounds"


class Timeout(DaemonError, TimeoutError):
    """A tool hit its own time limit (a bash command ran over, say)."""

    code = "timeout"


class NotFound(DaemonError):
    code = "not_found"


class PermissionDenied(DaemonError):
    code = "permission_denied"


class IoError(DaemonError):
    code = "io_error"


class TooLarge(DaemonError):
    code = "too_large"


class Busy(DaemonError):
    code = "busy"


class Internal(DaemonError):
    code = "internal"


class TakenOver(DaemonError):
    """An operator has taken over the desktop: until they hand it back the
    agent may only look (screenshot, zoom, cursor_position, window list,
    system ping and info); anything else is refused and does not run."""

    code = "taken_over"


class UnknownError(DaemonError):
    """An error code newer than this module knows (``.code`` holds it)."""

    code = "unknown_error"


class TransportError(Error):
    """No usable reply: no connection, no reply in time, or a reply that is
    not a protocol reply."""

    code = "transport_error"


class ConnectionFailed(TransportError, ConnectionError):
    code = "connect_failed"


class NoReply(TransportError, TimeoutError):
    code = "no_reply"


class MalformedReply(TransportError):
    code = "malformed_reply"


DAEMON_ERRORS = {
    cls.code: cls
    for cls in (BadRequest, Unauthorized, UnknownTool, UnknownAction,
                InvalidArgument, OutOfBounds, Timeout, NotFound,
                PermissionDenied, IoError, TooLarge, Busy, Internal,
                TakenOver)
}

# libbureau's return codes (bureau.h enum bureau_error).
LIB_CODES = {
    -1: BadRequest, -2: Unauthorized, -3: UnknownTool, -4: UnknownAction,
    -5: InvalidArgument, -6: OutOfBounds, -7: Timeout, -8: NotFound,
    -9: PermissionDenied, -10: IoError, -11: TooLarge, -12: Busy,
    -13: Internal, -14: UnknownError, -15: TakenOver,
    -20: ConnectionFailed, -21: NoReply, -22: MalformedReply,
}


def from_reply(reply):
    """The exception for an ``ok: false`` reply dict."""
    err = reply.get("error") if isinstance(reply, dict) else None
    if not isinstance(err, dict) or not isinstance(err.get("code"), str):
        return MalformedReply("malformed reply: ok is false but "
                              "'error.code' is missing", reply=reply)
    code = err["code"]
    message = err.get("message")
    if not isinstance(message, str):
        message = code
    cls = DAEMON_ERRORS.get(code, UnknownError)
    return cls(message, code=code, reply=reply)
