"""Mission Control's pages, as a person sees them, for docs/: the overview
and a desktop's page, taken in headless Chromium (selenium) while an
agent's request waits for approval.

    mc_shots.py BUREAU NAME OUTDIR

BUREAU_HOME names the desktops' home. Starts `bureau mission-control` on a
free loopback port, saves OUTDIR/mission-control.png and
OUTDIR/mission-control-desktop.png, prints one line per picture and
stops it. A person looks at them: this asserts only that the pages show
the desktop and its pending request."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import bt  # noqa: E402


def wait_css(b, sel, timeout):
    from selenium.webdriver.common.by import By
    return bt.wait_for(lambda: b.find_elements(By.CSS_SELECTOR, sel),
                       timeout, "%s on %s" % (sel, b.current_url))[0]


def main():
    bureau, name, out = sys.argv[1:4]
    port = bt.free_port(pair=False)
    listen = "127.0.0.1:%d" % port
    mc = subprocess.Popen([bureau, "mission-control", "--listen", listen],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True)
    b = None
    try:
        mc.stdout.readline()  # it listens
        url = subprocess.run([bureau, "mission-control", "--listen", listen,
                              "--print-url"], capture_output=True, text=True,
                             check=True).stdout.strip()
        b = bt.chromium("1400,1000")
        b.get(url)
        wait_css(b, '[data-desktop="%s"]' % name, 60)
        wait_css(b, "[data-approval]", 60)
        time.sleep(3)  # the live thumbnails' first frames
        p = os.path.join(out, "mission-control.png")
        b.save_screenshot(p)
        print(p)
        b.get("http://%s/desktop/%s" % (listen, name))
        wait_css(b, "[data-approval]", 60)
        time.sleep(6)  # the live view's first full frame
        p = os.path.join(out, "mission-control-desktop.png")
        b.save_screenshot(p)
        print(p)
    finally:
        if b is not None:
            b.quit()
        mc.terminate()
        mc.wait(30)


if __name__ == "__main__":
    main()
