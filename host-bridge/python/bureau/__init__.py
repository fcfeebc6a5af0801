"""bureau: drive a bureaud desktop from Python (standard library only).

    import bureau
    with bureau.Desktop("tcp://127.0.0.1:7300", token="...") as d:
        png = d.screenshot()            # PNG bytes with .width .height .frame
        d.left_click(100, 200)
        print(d.bash("uname -a").output)

Errors raise bureau.Error subclasses (bureau.InvalidArgument,
bureau.Unauthorized, bureau.Timeout, bureau.TransportError, ...), each with
.code and .message. See docs/client-python.md.
"""

from .desktop import Desktop, Image, Result
from .errors import (
    Error, DaemonError, BadRequest, Unauthorized, UnknownTool, UnknownAction,
    InvalidArgument, OutOfBounds, Timeout, NotFound, PermissionDenied,
    IoError, TooLarge, Busy, Internal, TakenOver, UnknownError,
    TransportError,
    ConnectionFailed, NoReply, MalformedReply,
)

PROTOCOL = 1

__all__ = [
    "Desktop", "Image", "Result", "PROTOCOL",
    "Error", "DaemonError", "BadRequest", "Unauthorized", "UnknownTool",
    "UnknownAction", "InvalidArgument", "OutOfBounds", "Timeout", "NotFound",
    "PermissionDenied", "IoError", "TooLarge", "Busy", "Internal",
    "TakenOver", "UnknownError", "TransportError", "ConnectionFailed", "NoReply",
    "MalformedReply",
]
