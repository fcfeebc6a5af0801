"""The daemon itself: its sockets under hostile peers, the event stream's
encryption, shutdown, the command line and the token's exposure."""

import json
import os
import socket
import struct
import subprocess
import time

import bt

X = bt.Xvfb("1280x800")
BUREAUD = os.path.join(bt.BUILD, "bureaud")


def noisy_screen(xvfb):
    """Random pixels on the root window: a screenshot is then ~3 MB of PNG,
    more than the loopback socket buffers hold for a peer that never
    reads."""
    path = "/tmp/bureau-noise-%d.png" % os.getpid()
    subprocess.run(["convert", "-size", "1280x800", "xc:", "+noise",
                    "Random", "-depth", "8", path], check=True)
    # display exits 1 after painting the root window; the witness below
    # checks what it did.
    xvfb.run(["display", "-window", "root", path], timeout=30)
    os.unlink(path)
    w, h, rgb = xvfb.xwd_pixels()
    assert len(set(rgb[:3000])) > 100, "the root window is not noisy"


def sp_req_connect(port):
    """A raw SP (scalability protocols) REQ peer over TCP that will never
    read: the nng TCP handshake, then length-prefixed messages."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(b"\x00SP\x00" + struct.pack(">H", 0x30) + b"\x00\x00")
    return s


def sp_req_send(s, reqid, body):
    msg = struct.pack(">I", 0x80000000 | reqid) + body
    s.sendall(struct.pack(">Q", len(msg)) + msg)


def test_peers_that_never_read():
    # Each connection pipelines screenshot requests and never reads the
    # replies: the first fills the socket buffers, the next one's send
    # waits. Without a send timeout each such send held a worker for
    # good, and with 16 workers the daemon stopped answering everyone.
    X1 = bt.Xvfb("1280x800")
    noisy_screen(X1)
    D = bt.Daemon(X1)
    peers = []
    try:
        req = json.dumps({"tool": "computer", "action": "screenshot",
                          "token": D.token}).encode()
        t1 = time.time()
        size = len(D.req.rpc(req))
        print("    one screenshot of the noise: %d bytes in %.2f s" %
              (size, time.time() - t1))
        for i in range(24):
            s = sp_req_connect(D.port)
            for k in range(2):
                sp_req_send(s, i * 2 + k + 1, req)
            peers.append(s)
        time.sleep(3)  # let them take every worker
        t0 = time.time()
        r = bt.Req(D.url, timeout_ms=30000)
        for i in range(5):
            rep = json.loads(r.rpc(json.dumps({
                "tool": "system", "action": "ping", "token": D.token})))
            assert rep["ok"] is True, rep
            if i == 0:
                print("    first ping answered in %.1f s behind 24 stalled "
                      "peers" % (time.time() - t0))
            time.sleep(0.5)
        # A screenshot, the kind of request the stalled peers sent.
        rep = json.loads(r.rpc(json.dumps({
            "tool": "computer", "action": "screenshot", "token": D.token})))
        assert rep["ok"] is True, rep
        # The stalled peers were disconnected: reading one now ends in
        # EOF once the buffered bytes are drained.
        s = peers[0]
        s.settimeout(30)
        while s.recv(1 << 20):
            pass
    finally:
        for s in peers:
            s.close()
        D.stop()


if __name__ == "__main__":
    bt.run([(n, f) for n, f in list(globals().items())
            if n.startswith("test_") and callable(f)])
