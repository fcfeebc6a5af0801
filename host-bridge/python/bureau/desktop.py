"""bureau.Desktop: one method per action of bureaud's protocol v1."""

import base64
import ctypes
import json
import os
import tempfile

from . import _lib
from . import errors

# Extra wait for a reply beyond a tool's own time limit (seconds).
_MARGIN = 10.0
# bureaud's default largest request (--max-request), in bytes. libbureau
# checks each request against the daemon's own limit; this only spares
# encoding a file that cannot fit under the default.
MAX_REQUEST = 64 << 20
# libbureau's default largest reply (BUREAU_DEFAULT_MAX_REPLY).
MAX_REPLY = 128 << 20


def _umask():
    """The process umask, read without changing it where Linux shows it
    (setting it to read it races other threads' file creation)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


class Image(bytes):
    """Encoded image bytes (PNG unless ``mime_type`` says otherwise) with
    the daemon's ``width``, ``height`` (screenshot space) and ``frame``."""

    def __new__(cls, data, mime_type="image/png", width=0, height=0,
                frame=0):
        self = super().__new__(cls, data)
        self.mime_type = mime_type
        self.width = width
        self.height = height
        self.frame = frame
        return self

    @classmethod
    def from_reply(cls, image):
        if image is None:
            return None
        try:
            return cls(base64.b64decode(image["data"], validate=True),
                       image.get("mime_type", "image/png"),
                       image["width"], image["height"],
                       image.get("frame", 0))
        except (KeyError, TypeError, ValueError) as e:
            raise errors.MalformedReply("malformed reply: bad 'image': %s"
                                        % e) from None

    @property
    def base64(self):
        return base64.b64encode(self).decode("ascii")

    def save(self, path):
        """Write the image to path atomically: a temporary file of an
        unpredictable name in path's directory (mkstemp: O_EXCL, so a
        symlink planted there is never followed), then os.replace. The
        file gets the mode a plain open() would (0666 less the umask)."""
        path = os.fspath(path)
        d = os.path.dirname(path) or "."
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".%s." % os.path.basename(
            path), suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(self)
                f.flush()
                os.fsync(f.fileno())
                os.fchmod(f.fileno(), 0o666 & ~_umask())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def __repr__(self):
        return "<Image %s %dx%d frame %d, %d bytes>" % (
            self.mime_type, self.width, self.height, self.frame, len(self))


class Result:
    """A successful reply: ``output`` (text or None), ``image`` (an Image
    or None), ``reply`` (the whole dict); other fields by ``result[key]``
    or ``result.get(key)``."""

    def __init__(self, reply):
        self.reply = reply
        self.output = reply.get("output")
        self.image = Image.from_reply(reply.get("image"))

    @property
    def exit_code(self):
        return self.reply.get("exit_code")

    def __getitem__(self, key):
        return self.reply[key]

    def __contains__(self, key):
        return key in self.reply

    def get(self, key, default=None):
        return self.reply.get(key, default)

    def __repr__(self):
        fields = {k: v for k, v in self.reply.items()
                  if k not in ("image", "token")}
        if self.image is not None:
            fields["image"] = self.image
        return "Result(%r)" % (fields,)


def _coord(x, y):
    """[x, y], or None for "where the pointer is"; x may be a pair."""
    if x is None:
        return None
    if y is None:
        x, y = x
    return [int(x), int(y)]


def _modifiers(m):
    if m is None or isinstance(m, str):
        return m
    return "+".join(m)


def _clean(fields):
    return {k: v for k, v in fields.items() if v is not None}


def _home():
    home = os.environ.get("BUREAU_HOME")
    if home:
        return home
    return os.path.join(os.path.expanduser("~"), ".local", "share",
                        "bureau")


class Desktop:
    """A bureaud desktop, reached at ``url`` (default
    tcp://127.0.0.1:7300). ``token`` defaults to $BUREAU_TOKEN. ``timeout``
    (seconds) bounds each call; tools with their own time limit (bash,
    wait, process wait, window launch) wait that long plus a margin.

    ``max_reply`` (bytes, default MAX_REPLY, 128 MiB) is the largest reply
    accepted: a longer one is refused from its announced length before it
    is read, and the call raises IoError naming the limit.

    Errors raise ``bureau.Error`` subclasses. A Desktop may be shared by
    threads (each call runs on its own nng context; the GIL is released
    while it waits); close it only when no call is running.
    """

    def __init__(self, url=None, token=None, timeout=30.0, max_reply=None):
        self._lib = _lib.load()
        self._c = None
        if token is None:
            token = os.environ.get("BUREAU_TOKEN") or None
        self.url = url or "tcp://127.0.0.1:7300"
        self.timeout = float(timeout)
        handle = ctypes.c_void_p()
        rc = self._lib.bureau_connect(
            self.url.encode("utf-8"),
            token.encode("utf-8") if token is not None else None,
            self.timeout, ctypes.byref(handle))
        if rc != 0:
            raise self._lib_error(rc, None)
        self._c = handle
        if max_reply is not None:
            rc = self._lib.bureau_set_max_reply(self._c, int(max_reply))
            if rc != 0:
                err = self._lib_error(rc, self._c)
                self.close()
                raise err

    @classmethod
    def from_name(cls, name, timeout=30.0, max_reply=None):
        """The desktop NAME managed by `bureau create`: its endpoint and
        token files under $BUREAU_HOME/NAME."""
        d = os.path.join(_home(), name)
        with open(os.path.join(d, "endpoint")) as f:
            url = f.readline().strip()
        try:
            with open(os.path.join(d, "token")) as f:
                token = f.read().strip()
        except FileNotFoundError:
            token = None
        return cls(url, token=token, timeout=timeout, max_reply=max_reply)

    # --- lifetime -------------------------------------------------------

    def close(self):
        c, self._c = self._c, None
        if c is not None:
            self._lib.bureau_close(c)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return "<bureau.Desktop %s%s>" % (
            self.url, "" if self._c is not None else " (closed)")

    # --- raw ------------------------------------------------------------

    def _lib_error(self, rc, handle):
        msg = self._lib.bureau_client_error(handle)
        msg = msg.decode("utf-8", "replace") if msg else ""
        name = self._lib.bureau_error_name(rc).decode()
        cls = errors.LIB_CODES.get(rc, errors.Error)
        return cls(msg or name, code=name)

    def call(self, request, timeout=None, check=True):
        """Send a request dict (the token and an id are added) and return
        the reply dict. With check (the default) an ``ok: false`` reply
        raises its Error; without, it is returned. timeout: seconds for
        this call (default: the Desktop's)."""
        if self._c is None:
            raise errors.ConnectionFailed("desktop %s is closed" % self.url)
        text = json.dumps(request, ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8")
        out = ctypes.c_void_p()
        rc = self._lib.bureau_call_timeout(
            self._c, text, float(timeout or 0), ctypes.byref(out))
        if not out.value:
            raise self._lib_error(rc, self._c)
        try:
            raw = ctypes.string_at(out.value)
        finally:
            self._lib.bureau_free(out)
        try:
            reply = json.loads(raw)
        except ValueError as e:  # libbureau parsed it already
            raise errors.MalformedReply("malformed reply: %s" % e) from None
        if rc != 0 and check:
            raise errors.from_reply(reply)
        return reply

    def _longer(self, seconds):
        if seconds is None:
            return None
        return max(self.timeout, float(seconds) + _MARGIN)

    def _tool(self, tool, action=None, call_timeout=None, **fields):
        req = {"tool": tool}
        if action is not None:
            req["action"] = action
        req.update(_clean(fields))
        return Result(self.call(req, timeout=call_timeout))

    # --- computer -------------------------------------------------------

    def _computer(self, action, screenshot=True, call_timeout=None, extra=None,
                  **fields):
        req = {"tool": "computer", "action": action}
        req.update(_clean(fields))
        if not screenshot:
            req["screenshot"] = False
        if extra:
            req.update(extra)
        return Result(self.call(req, timeout=call_timeout))

    def screenshot(self, **extra):
        """The screen as PNG bytes (an Image: .width, .height, .frame)."""
        r = self._computer("screenshot", extra=extra)
        if r.image is None:
            raise errors.MalformedReply("malformed reply: no 'image'",
                                        reply=r.reply)
        return r.image

    def zoom(self, region, **extra):
        """A full-detail crop of region (x1, y1, x2, y2) as an Image."""
        r = self._computer("zoom", region=[int(v) for v in region],
                           extra=extra)
        if r.image is None:
            raise errors.MalformedReply("malformed reply: no 'image'",
                                        reply=r.reply)
        return r.image

    def cursor_position(self):
        """(x, y) in screenshot space."""
        r = self._computer("cursor_position")
        try:
            x, y = r["coordinate"]
        except (KeyError, TypeError, ValueError):
            raise errors.MalformedReply(
                "malformed reply: no 'coordinate' [x, y]",
                reply=r.reply) from None
        return (x, y)

    # Input actions return a Result whose .image is the screen once it
    # settled; screenshot=False skips it. **extra adds protocol fields
    # (frame=N, settle_ms=...).
    def mouse_move(self, x, y=None, screenshot=True, **extra):
        return self._computer("mouse_move", screenshot, extra=extra,
                              coordinate=_coord(x, y))

    def left_click(self, x=None, y=None, modifiers=None, screenshot=True,
                   **extra):
        return self._computer("left_click", screenshot, extra=extra,
                              coordinate=_coord(x, y),
                              text=_modifiers(modifiers))

    def right_click(self, x=None, y=None, modifiers=None, screenshot=True,
                    **extra):
        return self._computer("right_click", screenshot, extra=extra,
                              coordinate=_coord(x, y),
                              text=_modifiers(modifiers))

    def middle_click(self, x=None, y=None, modifiers=None, screenshot=True,
                     **extra):
        return self._computer("middle_click", screenshot, extra=extra,
                              coordinate=_coord(x, y),
                              text=_modifiers(modifiers))

    def double_click(self, x=None, y=None, modifiers=None, screenshot=True,
                     **extra):
        return self._computer("double_click", screenshot, extra=extra,
                              coordinate=_coord(x, y),
                              text=_modifiers(modifiers))

    def triple_click(self, x=None, y=None, modifiers=None, screenshot=True,
                     **extra):
        return self._computer("triple_click", screenshot, extra=extra,
                              coordinate=_coord(x, y),
                              text=_modifiers(modifiers))

    def left_click_drag(self, start, end, screenshot=True, **extra):
        """Press at start (x, y), move to end (x, y), release."""
        return self._computer("left_click_drag", screenshot, extra=extra,
                              start_coordinate=_coord(start, None),
                              coordinate=_coord(end, None))

    def left_mouse_down(self, screenshot=True, **extra):
        return self._computer("left_mouse_down", screenshot, extra=extra)

    def left_mouse_up(self, screenshot=True, **extra):
        return self._computer("left_mouse_up", screenshot, extra=extra)

    def scroll(self, x=None, y=None, direction="down", amount=3,
               modifiers=None, screenshot=True, **extra):
        """direction: up, down, left or right; amount: wheel clicks."""
        return self._computer("scroll", screenshot, extra=extra,
                              coordinate=_coord(x, y),
                              scroll_direction=direction,
                              scroll_amount=int(amount),
                              text=_modifiers(modifiers))

    def type(self, text, screenshot=True, **extra):
        """Type any Unicode text exactly."""
        return self._computer("type", screenshot, extra=extra, text=text)

    def key(self, combo, screenshot=True, **extra):
        """Press a key combo: "ctrl+shift+t", "Return"."""
        return self._computer("key", screenshot, extra=extra, text=combo)

    def hold_key(self, combo, duration, screenshot=True, **extra):
        return self._computer("hold_key", screenshot,
                              call_timeout=self._longer(duration), extra=extra,
                              text=combo, duration=duration)

    def wait(self, duration, screenshot=True, **extra):
        return self._computer("wait", screenshot,
                              call_timeout=self._longer(duration), extra=extra,
                              duration=duration)

    # --- bash -----------------------------------------------------------

    def bash(self, command, session=None, timeout=None):
        """Run command in the persistent shell session; the Result has
        .output (stdout and stderr) and .exit_code. timeout (s, daemon
        default 120) kills the command's process group."""
        wait = self._longer(timeout if timeout is not None else 120)
        return self._tool("bash", call_timeout=wait, command=command,
                          session=session, timeout=timeout)

    def restart(self, session=None):
        """Kill the bash session's shell and start a fresh one."""
        return self._tool("bash", restart=True, session=session)

    # --- editor ---------------------------------------------------------

    def edit(self, command, path, **fields):
        """Anthropic's str_replace_based_edit_tool: command is view,
        create, str_replace, insert or undo_edit; fields as that tool
        names them (view_range, file_text, old_str, new_str, insert_line,
        insert_text)."""
        req = {"tool": "str_replace_based_edit_tool", "command": command,
               "path": path}
        req.update(_clean(fields))
        return Result(self.call(req))

    def view(self, path, view_range=None):
        return self.edit("view", path, view_range=view_range)

    def create(self, path, file_text):
        return self.edit("create", path, file_text=file_text)

    def str_replace(self, path, old_str, new_str=""):
        return self.edit("str_replace", path, old_str=old_str,
                         new_str=new_str)

    def insert(self, path, insert_line, text):
        return self.edit("insert", path, insert_line=insert_line,
                         new_str=text)

    def undo_edit(self, path):
        return self.edit("undo_edit", path)

    # --- file -----------------------------------------------------------

    def file_read(self, path, offset=None, length=None):
        """The file's bytes; with neither offset nor length the whole file
        (asked for piece by piece when the daemon caps one read)."""
        if offset is not None or length is not None:
            r = self._tool("file", "read", path=path, offset=offset,
                           length=length)
            return base64.b64decode(r["data"])
        parts, have = [], 0
        while True:
            r = self._tool("file", "read", path=path, offset=have)
            chunk = base64.b64decode(r["data"])
            parts.append(chunk)
            have += len(chunk)
            if not chunk or have >= r.get("size", 0):
                return b"".join(parts)

    def file_write(self, path, data, mode=None, parents=None):
        """Replace path atomically with data (bytes, or str as UTF-8).
        One request carries it: data over bureaud's request limit (64 MiB
        by default, after base64) raises TooLarge here rather than have
        nng drop the connection; send such a file in pieces with call()
        ("offset", "append")."""
        size = len(data.encode("utf-8")) if isinstance(data, str) \
            else len(data) * 4 // 3
        if size + len(path) + 4096 > MAX_REQUEST:
            raise errors.TooLarge(
                "data of %d bytes for '%s': over one request's %d bytes; "
                "write it in pieces by offset" % (len(data), path,
                                                  MAX_REQUEST))
        if isinstance(data, str):
            return self._tool("file", "write", path=path, text=data,
                              mode=mode, parents=parents)
        return self._tool("file", "write", path=path,
                          data=base64.b64encode(bytes(data)).decode("ascii"),
                          mode=mode, parents=parents)

    def file_list(self, path):
        return self._tool("file", "list", path=path)["entries"]

    def file_stat(self, path):
        return self._tool("file", "stat", path=path).reply

    def file_remove(self, path, recursive=None):
        return self._tool("file", "remove", path=path, recursive=recursive)

    def file_mkdir(self, path, parents=None, mode=None):
        return self._tool("file", "mkdir", path=path, parents=parents,
                          mode=mode)

    # --- process --------------------------------------------------------

    def process_start(self, command=None, argv=None, cwd=None, env=None):
        """Start a background process (a shell command or an argv list);
        returns its pid."""
        return self._tool("process", "start", command=command, argv=argv,
                          cwd=cwd, env=env)["pid"]

    def process_list(self):
        return self._tool("process", "list")["processes"]

    def process_output(self, pid, cursor=None):
        """Result with stdout, stderr, the next cursor and running."""
        return self._tool("process", "output", pid=pid, cursor=cursor)

    def process_signal(self, pid, signal="TERM"):
        return self._tool("process", "signal", pid=pid, signal=signal)

    def process_wait(self, pid, timeout=None):
        """Result with exit_code, or signal when a signal ended it."""
        return self._tool("process", "wait", self._longer(timeout),
                          pid=pid, timeout=timeout)

    # --- window ---------------------------------------------------------

    def window_list(self):
        """[{window, title, class, pid, x, y, width, height, active}]."""
        return self._tool("window", "list")["windows"]

    def window_activate(self, window):
        return self._tool("window", "activate", window=window)

    def window_close(self, window):
        return self._tool("window", "close", window=window)

    def window_move(self, window, x, y):
        return self._tool("window", "move", window=window, x=x, y=y)

    def window_resize(self, window, width, height):
        return self._tool("window", "resize", window=window, width=width,
                          height=height)

    def window_launch(self, command, wait=None, timeout=None):
        """Start command; with wait, the Result has the new 'window'."""
        return self._tool("window", "launch", self._longer(timeout),
                          command=command, wait=wait, timeout=timeout)

    # --- clipboard ------------------------------------------------------

    def clipboard_get(self):
        return self._tool("clipboard", "get")["text"]

    def clipboard_set(self, text):
        return self._tool("clipboard", "set", text=text)

    # --- accessibility ----------------------------------------------------

    def accessibility_tree(self, window=None, depth=None, max_nodes=None):
        """The AT-SPI tree: a list of nodes {id, role, name, states,
        bounds (screenshot space), text?, value?, actions, children}, from
        the applications or one window's frames."""
        return self._tool("accessibility", "tree", window=window,
                          depth=depth, max_nodes=max_nodes).reply["nodes"]

    def accessibility_find(self, role=None, name=None, name_contains=None,
                           state=None):
        """The elements matching every filter given, flat (no
        children)."""
        return self._tool("accessibility", "find", role=role, name=name,
                          name_contains=name_contains,
                          state=state).reply["nodes"]

    def accessibility_do(self, id, name=None):
        """Run element id's action (its first, or the one named); the
        action's name."""
        return self._tool("accessibility", "do", id=id,
                          name=name).reply["done"]

    def accessibility_set_text(self, id, text):
        """Replace an editable element's text."""
        return self._tool("accessibility", "set_text", id=id, text=text)

    # --- the operator ---------------------------------------------------

    def ask(self, message, timeout=None):
        """Ask the desktop's operator and wait for their answer (the host
        agent holds the question: a desktop reached through `bureau
        start` or `attach`). Returns the answer's text; raises
        bureau.Timeout when no one answers within timeout seconds (default
        the desktop's approve timeout, 300), bureau.PermissionDenied when
        the operator declines."""
        wait = self._longer(timeout if timeout is not None else 300)
        return self._tool("operator", "ask", call_timeout=wait,
                          message=message, timeout=timeout).reply["answer"]

    # --- system ---------------------------------------------------------

    def ping(self):
        return self._tool("system", "ping")

    def info(self):
        """version, protocol, screen and scaled size, capabilities,
        uptime."""
        return self._tool("system", "info").reply

    def fork(self, ephemeral=True, net=None, name=None, timeout=300):
        """Fork this desktop into a twin as it is now, processes and all
        (the host agent runs `bureau fork`; the desktop's policy must name
        the class fork). Returns a new Desktop connected to the fork's
        endpoint with its agent token; .fork_name is its name. An
        ephemeral fork (the default) is discarded when it stops."""
        fields = {"ephemeral": bool(ephemeral)}
        if net is not None:
            fields["net"] = net
        if name is not None:
            fields["name"] = name
        r = self._tool("system", "fork", call_timeout=self._longer(timeout),
                       **fields).reply
        twin = Desktop(r["endpoint"], token=r["token"], timeout=self.timeout)
        twin.fork_name = r["name"]
        return twin
