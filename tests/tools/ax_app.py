"""A small GTK 3 window for tests/integration/test_accessibility.py: a
button and a text entry that print what happens to them on stdout (the
application's own account, independent of bureaud).

    ax_app.py TITLE X Y
"""
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

title, x, y = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
w = Gtk.Window(title=title)
w.move(x, y)
w.set_default_size(300, 120)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
b = Gtk.Button(label="Press me")
b.connect("clicked", lambda *_: print("pressed", flush=True))
e = Gtk.Entry()
e.connect("changed", lambda en: print("entry=" + en.get_text(), flush=True))
c = Gtk.CheckButton(label="Remember")
c.connect("toggled", lambda cb: print("checked=%d" % cb.get_active(),
                                      flush=True))
box.add(b)
box.add(e)
box.add(c)
w.add(box)
w.connect("destroy", Gtk.main_quit)
w.show_all()
print("ready", flush=True)
Gtk.main()
