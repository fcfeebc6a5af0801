#!/usr/bin/env bash
# The desktop directory's file names are one table (host-bridge/store/
# files.c; DESIGN.md, "Nothing lost, one owner per desktop"): every name
# the host side's code opens, writes or removes in a desktop's directory
# by a literal (desktop_path, store_dir, qemu_file, the agent's ag_write
# and ag_unlink, the lists of names handed to qemu_unlink and the warm
# state's files) is an entry of it, so the table says what a directory
# may hold (bureau receive takes nothing else). Prints PASS/FAIL.
#
#   test_store_files.sh [BUILD_DIR]   (no build needed)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
/usr/bin/python3 - <<'PY'
import glob, re
tab = open("host-bridge/store/files.c").read()
pats = re.findall(r'^\s*\{ "([^"]+)", ', tab, re.M)
def rx(p):
    r = re.escape(p).replace(re.escape("<hex>"), "[0-9a-f]+")
    return re.compile("^" + r.replace(re.escape("<n>"), "[0-9]{1,19}") + "$")
table = [rx(p) for p in pats]
calls = re.compile(r'(?:desktop_path|store_dir|qemu_file|desktop_file_bytes|'
                   r'ag_unlink|ag_write|ag_read_pid|file_stamp|store_put|'
                   r'fork_link)\s*\(\s*[^,()]+,\s*"([^"]+)"')
# the lists of names (static arrays whose name ends in "files", libvirt's
# grants rw and ro)
lists = re.compile(r'static const char \*const (?:\w*files\w*|rw|ro)\[\]'
                   r'\s*=\s*\{([^}]*)\}', re.S)
used = {}
for f in glob.glob("host-bridge/**/*.c", recursive=True):
    s = open(f).read()
    names = [m.group(1) for m in calls.finditer(s)]
    for m in lists.finditer(s):
        names += re.findall(r'"([^"]+)"', m.group(1))
    for n in names:
        used.setdefault(n, set()).add(f)
bad = {n: fs for n, fs in used.items() if not any(r.match(n) for r in table)}
dups = sorted({p for p in pats if pats.count(p) > 1})
if bad:
    print("FAIL store_files_names: names not in host-bridge/store/files.c: "
          + "; ".join("%s (%s)" % (n, ", ".join(sorted(fs)))
                      for n, fs in sorted(bad.items())))
else:
    print("PASS store_files_names: %d names used by literal, all in the "
          "table of %d" % (len(used), len(pats)))
print(("FAIL store_files_unique: " + ", ".join(dups)) if dups else
      "PASS store_files_unique")
PY
