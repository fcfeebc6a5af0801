"""The system tool's lifecycle actions: `sync` and `set_clock`'s checks of
its input. A successful set_clock is tested in the guest only
(tests/e2e/test_lifecycle.sh): here the daemon runs on the host, often as
root, and would step the host's clock."""

import time

import bt

X = bt.Xvfb("640x480")
D = bt.Daemon(X, ["--scale", "none"])


def test_sync():
    r = bt.ok(D.call(tool="system", action="sync"))
    assert r["output"] == "synced", r
    assert isinstance(r["elapsed_s"], float) and r["elapsed_s"] >= 0, r


def test_capabilities():
    caps = bt.ok(D.call(tool="system", action="info"))["capabilities"]
    assert "sync" in caps["system"] and "set_clock" in caps["system"], caps


def proc_meminfo():
    m = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":", 1)
            m[k] = int(v.split()[0]) * 1024
    return m


def test_info_load_and_memory():
    # The machine's own figures, which a host cannot see inside a VM:
    # checked against /proc read here (the daemon runs on this machine).
    with open("/proc/loadavg") as f:
        before = [float(x) for x in f.read().split()[:3]]
    r = bt.ok(D.call(tool="system", action="info"))
    with open("/proc/loadavg") as f:
        after = [float(x) for x in f.read().split()[:3]]
    load, mem = r["load"], r["memory"]
    assert isinstance(load, list) and len(load) == 3, r
    for i in range(3):
        lo, hi = sorted((before[i], after[i]))
        assert lo - 0.01 <= load[i] <= hi + 0.01, (load, before, after)
    m = proc_meminfo()
    assert mem["total_bytes"] == m["MemTotal"], (mem, m["MemTotal"])
    assert 0 < mem["available_bytes"] <= mem["total_bytes"], mem
    # MemAvailable moves with the page cache: within 10 % of the total
    assert abs(mem["available_bytes"] - m["MemAvailable"]) < \
        m["MemTotal"] // 10, (mem, m["MemAvailable"])


def test_set_clock_bad_input():
    now = time.time_ns()
    # Missing or of another type: bad_request; out of range (2001-2255
    # in ns): out_of_bounds. None of them may touch the clock.
    for bad, code in ((None, None),
                      ("1796150000000000000", "bad_request"),
                      (now / 1e9, "bad_request"),
                      ([now], "bad_request"),
                      (True, "bad_request"),
                      (12345, "out_of_bounds"),
                      (-now, "out_of_bounds"),
                      (9200000000000000000, "out_of_bounds")):
        args = {} if bad is None else {"time_ns": bad}
        r = D.call(tool="system", action="set_clock", **args)
        assert r.get("ok") is False, (bad, r)
        bt.expect_error(r, code or r["error"]["code"], "time_ns")
    # 2**64 does not fit the integer the daemon reads
    r = D.raw(b'{"tool":"system","action":"set_clock","time_ns":'
              b'18446744073709551616,"token":"' + D.token.encode() + b'"}')
    assert r["ok"] is False, r
    assert D.alive()


if __name__ == "__main__":
    bt.run([(n, f) for n, f in list(globals().items())
            if n.startswith("test_") and callable(f)])
