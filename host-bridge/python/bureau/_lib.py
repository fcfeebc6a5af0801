"""ctypes binding of libbureau (host-bridge/include/bureau.h).

Why libbureau and not libnng directly: the C library already owns the
transport (one nng context per call, so threads can share a Desktop;
background redial; timeouts that tell "no connection" from "no reply";
reply checks), and ctypes releases the GIL while a call waits. Binding
libnng would mean redoing all of that with nng's by-value handle structs.

The library is looked up in this order: $BUREAU_LIB (a path), the source
tree's build/libbureau.so (this file lives in host-bridge/python/bureau/),
then the system (libbureau.so.0 / libbureau.so).
"""

import ctypes
import ctypes.util
import os
import sysconfig
import threading

_lock = threading.Lock()
_lib = None


def _candidates():
    env = os.environ.get("BUREAU_LIB")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    yield os.path.join(root, "build", "libbureau.so")
    # make install's: PREFIX/lib, three folders up from this one
    yield os.path.normpath(os.path.join(here, "..", "..", "..",
                                        "libbureau.so.0"))
    # the host package's (packaging/host): a directory of its own
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        yield "/usr/lib/%s/bureau/libbureau.so.0" % multiarch
    yield "libbureau.so.0"
    found = ctypes.util.find_library("bureau")
    if found:
        yield found
    yield "libbureau.so"


def load():
    """The loaded library (loaded once)."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        errors = []
        for path in _candidates():
            if os.sep in path and not os.path.exists(path):
                errors.append("%s: no such file" % path)
                continue
            try:
                lib = ctypes.CDLL(path)
                break
            except OSError as e:
                errors.append(str(e))
        else:
            raise ImportError("cannot load libbureau (build it with `make "
                              "build/libbureau.so` or set $BUREAU_LIB): "
                              + "; ".join(errors))
        vp = ctypes.c_void_p
        lib.bureau_connect.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                       ctypes.c_double, ctypes.POINTER(vp)]
        lib.bureau_connect.restype = ctypes.c_int
        lib.bureau_close.argtypes = [vp]
        lib.bureau_close.restype = None
        lib.bureau_set_timeout.argtypes = [vp, ctypes.c_double]
        lib.bureau_set_timeout.restype = ctypes.c_int
        lib.bureau_set_max_reply.argtypes = [vp, ctypes.c_size_t]
        lib.bureau_set_max_reply.restype = ctypes.c_int
        # The reply comes back as a raw pointer so that it can be freed by
        # the library after it is copied.
        lib.bureau_call_timeout.argtypes = [vp, ctypes.c_char_p,
                                            ctypes.c_double,
                                            ctypes.POINTER(vp)]
        lib.bureau_call_timeout.restype = ctypes.c_int
        lib.bureau_client_error.argtypes = [vp]
        lib.bureau_client_error.restype = ctypes.c_char_p
        lib.bureau_error_name.argtypes = [ctypes.c_int]
        lib.bureau_error_name.restype = ctypes.c_char_p
        lib.bureau_free.argtypes = [vp]
        lib.bureau_free.restype = None
        _lib = lib
        return lib
