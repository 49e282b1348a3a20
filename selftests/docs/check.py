#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""check.py TOP BUILD [DEFAULTS.json]: what the docs say against the code.

The documented counter names, flags, defaults, sizes, pins, versions and
links of README.md, esactl.8 and docs/*.md, each compared with the one
place in the code that defines it: the switch's counter table
(user/common/names.c), the PS's (user/ps/ps_stats.c), libesa's stats
(user/lib/esa.h) and the Python package's view of them, the UAPI header,
the loader's pins, `esactl prog load`'s defaults as a program loaded
without arguments shows them (DEFAULTS.json: `esactl -j prog show`),
`esactl prog help`, `esa-ps --help`; and docs/architecture.md's map: its
files exist, its functions too, each in the file named beside it.  One TAP
line per check (no plan); status 1 if any failed.  Run by suite 05-esactl.
"""
import json
import os
import re
import subprocess
import sys

TOP, BUILD = sys.argv[1], sys.argv[2]
DEFAULTS = sys.argv[3] if len(sys.argv) > 3 else None
failed = 0


def read(path):
    with open(os.path.join(TOP, path)) as f:
        return f.read()


def tap(ok, what, why=""):
    global failed
    failed += not ok
    print("%s - %s%s" % ("ok" if ok else "not ok", what,
                         "" if ok or not why else ": " + why))


def c_table(path, table):
    """The strings of a designated-initializer table of names."""
    body = read(path).split(table, 1)[1].split("};", 1)[0]
    return re.findall(r'=\s*"([a-z0-9_]+)"', body)


def c_define(path, name):
    return int(re.search(r"#define\s+%s\s+(\d+)" % name, read(path)).group(1))


SWITCH = c_table("user/common/names.c", "esa_counter_names")
PS = c_table("user/ps/ps_stats.c", "ps_counter_names")
STATS = re.findall(r"^\s*uint64_t\s+(\w+);",
                   read("user/lib/esa.h").split("struct esa_stats {", 1)[1]
                   .split("};", 1)[0], re.M)
MAX_VALUES = c_define("include/uapi/linux/esa.h", "ESA_MAX_VALUES")
HDR_LEN = c_define("include/uapi/linux/esa.h", "ESA_HDR_LEN")


def ip_len(nvals):
    return 20 + 8 + HDR_LEN + 4 * nvals


def man_text():
    """esactl.8 as words: font escapes and request names gone."""
    t = read("user/esactl/esactl.8")
    t = re.sub(r"\\f[BIRP]", "", t)
    t = re.sub(r"^\.(B|I|BR|IR|RB|RI|TP|PP|IP|SH|TH|nf|fi|br|sp)\b ?", "", t,
               flags=re.M)
    return t.replace('"', "").replace("\\-", "-")


def man_section(name):
    t = read("user/esactl/esactl.8")
    return t.split(".SH %s\n" % name, 1)[1].split("\n.SH ", 1)[0]


# ------------------------------------------------------------------ #
# Counter names                                                       #
# ------------------------------------------------------------------ #

def stats_list():
    """esactl.8's STATS list: the bold words from 'Per job:' on."""
    s = man_section("STATS").split("Per job:", 1)[1].split("With esa.ko", 1)[0]
    s = "\n".join(l for l in s.splitlines() if re.match(r"\.(B|BR|RB) ", l))
    s = re.sub(r"\\f[BIRP]|^\.[A-Z]+ ?|[(),.]", " ", s, flags=re.M)
    return [w for w in s.split() if re.fullmatch(r"[a-z][a-z0-9_]+", w)
            and w not in ("and", "one", "counter", "per", "reason", "to",
                          "drop", "a", "packet")]


got = stats_list()
missing = sorted(set(SWITCH) - set(got))
extra = sorted(set(got) - set(SWITCH))
tap(not missing and not extra,
    "esactl.8 lists every counter of esactl stats show, and no other",
    "missing %s, unknown %s" % (missing, extra))

readme = " ".join(read("README.md").split())
m = re.search(r"counted per job \(`esactl stats show`\): `([^`]*)`", readme)
words = m.group(1).split() if m else []
bad = [w for w in words if w not in SWITCH and w not in ("...", "drop_*")]
tap(m and not bad, "README's list of counters names only esactl's counters",
    "not counters: %s" % bad if m else "the list is gone")


def md_docs():
    out = ["README.md"]
    for f in sorted(os.listdir(os.path.join(TOP, "docs"))):
        if f.endswith(".md"):
            out.append("docs/" + f)
    return out


def drops_named(path):
    text = read(path)
    if path.endswith(".8"):
        text = man_text()
    return set(re.findall(r"\b(drop_[a-z_]+)\b", text)) - {"drop_"}


known = set(SWITCH) | set(PS) | set(STATS) | {"drop_percent"}
for path in md_docs() + ["user/esactl/esactl.8"]:
    bad = sorted(w for w in drops_named(path) if w not in known)
    tap(not bad, "%s: every drop counter it names exists" % path,
        "no such counter: %s" % bad)

# ------------------------------------------------------------------ #
# esactl prog load: flags and defaults; pins; pages it refers to      #
# ------------------------------------------------------------------ #

usage = subprocess.run([os.path.join(BUILD, "esactl"), "prog", "help"],
                       capture_output=True, text=True)
usage = usage.stdout + usage.stderr
flags = set(re.findall(r"\[ ([a-z-]+) ", usage.split("prog load", 1)[1]
                       .split("esactl prog unload", 1)[0]))
synopsis = man_text().split("esactl prog load", 1)[1].split("\n", 1)[0]
have = set(re.findall(r"\[ ([a-z-]+) ", synopsis))
tap(flags and flags == have,
    "esactl.8's prog load takes the words esactl prog help shows",
    "help %s, man %s" % (sorted(flags), sorted(have)))

if DEFAULTS:
    with open(DEFAULTS) as f:
        cfg = json.load(f)
    prog = man_text().split("Load and pin the program.", 1)[1] \
        .split("esactl prog unload", 1)[0]
    prog = " ".join(prog.split())
    want = {
        "port": r"port is the UDP port workers send to \((\d+)\)",
        "values": r"values the number of int32 values per packet, a multiple"
                  r" of 8 up to (\d+) \((\d+)\)",
        "slots": r"slots the number of aggregator slots \((\d+)\)",
        "jobs": r"jobs the number of job ids, 0 to N ?-1 \((\d+)\)",
        "stale_ms": r"PS \((\d+); 0 never\)",
    }
    for key, rx in want.items():
        m = re.search(rx, prog)
        if not m:
            tap(False, "esactl.8 states prog load's default %s" % key,
                "no '%s' in the man page" % rx)
            continue
        said = [int(x) for x in m.groups()]
        real = [cfg[key]] if key != "values" else [MAX_VALUES, cfg[key]]
        tap(said == real, "esactl.8: prog load's %s is %s" % (
            key, "at most %d, by default %d" % tuple(real) if key == "values"
            else "by default %d" % real[0]), "the page says %s" % said)

pins = re.findall(r'\{ "([a-z-]+)",\s+(?:"\w+"|NULL),\s+\d \}',
                  read("user/common/loader.c"))
pins.append("bind")	 # the kfunc variant's, pinned beside them
files = man_section("FILES")
named = set(re.findall(r"\b([a-z][a-z-]*[a-z]|[a-z])\b", files.split("/sys/fs/bpf/esa/", 1)[1]
                       .split("(", 1)[0])) - {"the", "programs", "maps",
                                              "and", "with", "esa", "ko",
                                              "variant", "kfunc", "s"}
tap(pins and set(pins) == named,
    "esactl.8's FILES names the pins the loader makes, and no other",
    "pins %s, page %s" % (sorted(pins), sorted(named)))

pages = set()
for root, _, fs in os.walk(TOP):
    if "/build" in root or "/.git" in root:
        continue
    pages |= {f for f in fs if re.fullmatch(r"[\w.-]+\.[1-8]", f)}
refs = re.findall(r"^\.BR (esa[\w-]*) \((\d)\)", man_section("SEE ALSO"), re.M)
bad = ["%s(%s)" % r for r in refs if "%s.%s" % r not in pages]
tap(not bad, "esactl.8 refers to no ESA man page that does not exist",
    "missing %s" % bad)

# ------------------------------------------------------------------ #
# esa-ps --help against docs/ps.md                                    #
# ------------------------------------------------------------------ #

help_ = subprocess.run([os.path.join(BUILD, "esa-ps"), "--help"],
                       capture_output=True, text=True)
help_ = help_.stdout + help_.stderr
opts = {}
for m in re.finditer(r"^  (?:(-\w), )?\s*(--[\w-]+)[^\n]*((?:\n {20,}[^\n]*)*)",
                     help_, re.M):
    # its default: "(N)", "(word)", "(default[:] what, ...)", or what ends
    # its first line in parentheses; "required"
    text = " ".join((m.group(0)).split())
    d = re.search(r"\(([^()]*)\)\s*$", m.group(0).split("\n")[0]) or \
        re.search(r"\((default:? [^,;)]+|[\w.-]+)[,;)]", text)
    d = re.sub(r"^default:? ", "", d.group(1)) if d else None
    opts[m.group(2)] = "required" if re.search(r"\brequired\b", text) else d
rows = {}
for line in read("docs/ps.md").splitlines():
    m = re.match(r"\| `(?:-\w, )?(--[\w-]+)[^`]*` \|\s*([^|]*?)\s*\|", line)
    if m:
        rows[m.group(1)] = m.group(2).replace("`", "").strip()
tap(opts and set(opts) == set(rows),
    "docs/ps.md's table has the options of esa-ps --help",
    "help %s, doc %s" % (sorted(opts), sorted(rows)))
for o, d in sorted(opts.items()):
    # an option the doc gives no default (an empty column) has none
    if d is None or o not in rows or not rows[o] or d.startswith("CAP"):
        continue
    tap(d.lower() == rows[o].lower(),
        "esa-ps %s: the default --help gives is docs/ps.md's" % o,
        "--help says '%s', docs/ps.md '%s'" % (d, rows[o]))

# ------------------------------------------------------------------ #
# Versions, sizes, libesa's counters, links                           #
# ------------------------------------------------------------------ #

lib = c_define("user/lib/esa_int.h", "ESA_LIB_VERSION")
said = re.findall(r"`esa_version\(\)` (\d+)", read("docs/library.md"))
tap(said and all(int(v) == lib for v in said),
    "docs/library.md's esa_version() is libesa's (%d)" % lib,
    "it says %s" % said)

proto = " ".join(read("docs/protocol.md").split())
sizes = re.findall(r"With (\d+) values a frame is (\d+) bytes", proto)
sizes += [(n, str(int(b) + 14)) for n, b in
          re.findall(r"with (\d+) \((\d+) bytes of IP packet\)", proto)]
mtus = re.findall(r"it needs an MTU of (\d+)", proto)
bad = ["%s values: %s bytes" % s for s in sizes
       if 14 + ip_len(int(s[0])) != int(s[1])]
bad += ["an MTU of %s" % m for m in mtus if int(m) != ip_len(MAX_VALUES)]
tap(sizes and not bad,
    "docs/protocol.md's packet sizes are ESA_IP_LEN()'s (%d values: %d bytes)"
    % (MAX_VALUES, ip_len(MAX_VALUES)), "; ".join(bad))

py = re.search(r"_STATS = \(([^)]*)\)", read("user/python/esa/__init__.py"))
py = re.findall(r'"(\w+)"', py.group(1)) if py else []
tap(py == STATS and "`worker.stats()` gives libesa's counters" in
    read("docs/torch.md"),
    "worker.stats() gives every counter of libesa's struct esa_stats, as "
    "docs/torch.md says", "missing %s, unknown %s" % (
        sorted(set(STATS) - set(py)), sorted(set(py) - set(STATS))))


def anchors(path):
    """GitHub's anchors of a markdown file's headings, and its <a id>s."""
    text = read(path)
    out = set(re.findall(r'<a (?:id|name)="([\w-]+)"', text))
    for h in re.findall(r"^#+ (.*)$", text, re.M):
        a = re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        out.add(a)
    return out


bad = []
for path in md_docs():
    # another document's section, or (no file) one of this document's own
    for target, anchor in re.findall(r"\]\(((?:[\w./-]*\.md)?)#([\w-]+)\)",
                                     read(path)):
        dest = os.path.normpath(os.path.join(os.path.dirname(path), target or
                                             os.path.basename(path)))
        if not os.path.exists(os.path.join(TOP, dest)) or \
           anchor not in anchors(dest):
            bad.append("%s -> %s#%s" % (path, target, anchor))
tap(not bad, "every link to a section of a document finds that section",
    ", ".join(bad))

# ------------------------------------------------------------------ #
# docs/architecture.md: the map's files and functions                 #
# ------------------------------------------------------------------ #

SRC_EXT = (".c", ".h", ".sh", ".py", ".mk", ".md", ".yaml", ".map", ".json",
           ".service", ".conf", ".8", ".3", ".1")


def tree_files():
    """The tree's files, as paths from TOP: not build/, .git/ nor vm/
    (the VM suite's cache holds whole kernel trees: reading them took
    minutes and let a kernel file answer for a name of ours)."""
    out = []
    for d, dirs, files in os.walk(TOP):
        rel = os.path.relpath(d, TOP)
        dirs[:] = [x for x in dirs if not x.startswith(".") and
                   not (rel == "." and x in ("build", "vm"))]
        out += [os.path.normpath(os.path.join(rel, f)) for f in files]
    return out


FILES = tree_files()
BASENAMES = {os.path.basename(f) for f in FILES}
SOURCES = {f: read(f) for f in FILES if f.endswith((".c", ".h", ".py"))}
arch = read("docs/architecture.md")
names = set(re.findall(r"`([\w./*-]+)`", arch))
bad = []
for n in sorted(names):
    if "*" in n or not n.endswith(SRC_EXT) or n.startswith("."):
        continue
    if "/" in n and not os.path.exists(os.path.join(TOP, n)):
        bad.append(n)
    elif "/" not in n and n not in BASENAMES:
        bad.append(n)
tap(not bad, "every file docs/architecture.md names exists", ", ".join(bad))

# "`f()` (`path`" or "`f()` in `path`": f is in that file; any other
# `f()` is in some C or Python file of the tree.
bad = []
said = re.findall(r"`(\w+)\(\)`,? (?:\(|in )`([\w./-]+\.[ch])`", arch)
for fn, path in said:
    if not re.search(r"\b%s\s*\(" % fn, SOURCES.get(path, "")):
        bad.append("%s() in %s" % (fn, path))
for fn in sorted(set(re.findall(r"`(\w+)\(\)`", arch))):
    if not any(re.search(r"\b%s\s*\(" % fn, t) for t in SOURCES.values()):
        bad.append("%s()" % fn)
tap(said and not bad, "every function docs/architecture.md names exists, in the "
    "file it names (%d said where)" % len(said), ", ".join(bad))
sys.exit(1 if failed else 0)
