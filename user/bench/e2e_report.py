#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The end-to-end benchmark's report (user/bench/e2e.sh): the table, the
plot's data and gnuplot, and the summary line, from DIR/results.jsonl.

Exit status 1 if any sum was wrong, or if a cell that ran has no result.
Timings are printed, never judged.
"""
import argparse
import json
import os
import subprocess
import sys

GB = float(1 << 30)
MB = float(1 << 20)
HERE = os.path.dirname(os.path.abspath(__file__))


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def fastest(rows):
    """One row per cell (label, ranks, size): of e2e.sh -R's rounds, the
    fastest right one; a cell with a wrong round is that round (WRONG); a
    cell never available, its first row."""
    cells = {}
    for r in rows:
        k = (r["label"], r["ranks"], r["mib"])
        cells.setdefault(k, []).append(r)
    out = []
    for k, rs in cells.items():
        ran = [r for r in rs if r.get("available")]
        wrong = [r for r in ran if not r.get("ok")]
        if wrong:
            out.append(wrong[0])
        elif ran:
            b = dict(min(ran, key=lambda r: r["seconds"]))
            b["rounds_ms"] = [1e3 * r["seconds"] / r["reps"] for r in ran]
            out.append(b)
        else:
            out.append(rs[0])
    return out


def derived(r):
    """The table's numbers of one measured cell."""
    m, w, reps = r["machine"], r["ranks"], r["reps"]
    per_op = r["seconds"] / reps
    gbytes = w * r["mib"] * MB * reps / GB     # every rank's tensor, every rep
    wall = m["wall"] or r["seconds"]
    ncpu = os.cpu_count() or 1
    # ours: the machine's busy time but other processes' (the ranks, esa-ps,
    # the kernel's softirq and threads; steal is the hypervisor's)
    ours = max(m["busy"] - m["others"], 0.0)
    kernel = ours - r["cpu_ranks"] - m["ps"]
    st = r.get("stats") or {}
    res = st.get("rx_results", 0)
    return {
        "ms": 1e3 * per_op,
        "MBps": r["mib"] / per_op,
        "kpps": (m["sw_rx"]) / wall / 1e3,
        "host": r["cpu_ranks"] / gbytes,
        "kernel": kernel / gbytes,
        "ps": m["ps"] / gbytes,
        "cpu": ours / gbytes,
        "switch": m["sw_prog"] / gbytes if m.get("sw_prog") else None,
        "other": m["others"] / (wall * ncpu),
        "idle": m["idle"] / (wall * ncpu),
        "in_switch": (1.0 - st.get("rx_from_ps", 0) / res) if res else None,
        "resends": st.get("tx_resends", 0),
    }


def table(rows):
    """Rows of text, one per cell, gloo first within each (ranks, size)."""
    hdr = ("ranks", "MB", "config", "ms/op", "MB/s/rank", "vs gloo", "kpps sw",
           "host s/GB", "kernel s/GB", "PS s/GB", "CPU s/GB", "CPU vs gloo", "switch s/GB",
           "in switch",
           "resends", "other", "idle", "check")
    out = [hdr]
    gloo = {(r["ranks"], r["mib"]): derived(r)["MBps"] for r in rows
            if r.get("available") and r["label"] == "gloo" and r.get("ok")}
    gcpu = {(r["ranks"], r["mib"]): cpu_per_gb(derived(r)) for r in rows
            if r.get("available") and r["label"] == "gloo" and r.get("ok")}
    for r in rows:
        key = (r["ranks"], r["mib"])
        if not r.get("available"):
            out.append((str(r["ranks"]), str(r["mib"]), r["label"],
                        "not available: " + r.get("why", "?")))
            continue
        d = derived(r)
        g = gloo.get(key)
        gc = gcpu.get(key)
        out.append((str(r["ranks"]), str(r["mib"]), r["label"], "%.1f" % d["ms"],
                    "%.1f" % d["MBps"], "%.2f" % (d["MBps"] / g) if g else "-",
                    "%.0f" % d["kpps"], "%.2f" % d["host"], "%.2f" % d["kernel"],
                    "%.2f" % d["ps"], "%.2f" % cpu_per_gb(d),
                    "%.2f" % (cpu_per_gb(d) / gc) if gc else "-",
                    "-" if d["switch"] is None else "%.2f" % d["switch"],
                    "-" if d["in_switch"] is None else "%.0f%%" % (100 * d["in_switch"]),
                    str(d["resends"]), "%.0f%%" % (100 * d["other"]),
                    "%.0f%%%s" % (100 * d["idle"], "*" if d["idle"] < CPU_BOUND_IDLE else ""),
                    "ok" if r["ok"] else "WRONG"))
    return out


# A cell during which the machine was less idle than this measured the CPU
# (docs/evaluation.md): its idle share is starred.
CPU_BOUND_IDLE = 0.20


def cpu_bound(rows):
    """The cells whose run left the machine under CPU_BOUND_IDLE idle."""
    return [r for r in rows if r.get("available") and derived(r)["idle"] < CPU_BOUND_IDLE]


def cpu_per_gb(d):
    """Host CPU per GB reduced: the ranks', esa-ps's and the kernel's for them."""
    return d["cpu"]


def fmt(out):
    full = [r for r in out if len(r) == len(out[0])]
    wid = [max(len(r[i]) for r in full) for i in range(len(out[0]))]
    lines = []
    for r in out:
        if len(r) != len(out[0]):
            lines.append("  ".join(c.rjust(wid[i]) for i, c in enumerate(r[:3])) + "  " + r[3])
        else:
            lines.append("  ".join(c.rjust(wid[i]) for i, c in enumerate(r)))
    return "\n".join(lines)


def best(rows, ranks, mib):
    """gloo's MB/s and ESA's best switch configuration's at (ranks, mib)."""
    g = [derived(r)["MBps"] for r in rows if r.get("available") and r.get("ok")
         and r["label"] == "gloo" and r["ranks"] == ranks and r["mib"] == mib]
    e = [(derived(r)["MBps"], r["label"]) for r in rows if r.get("available")
         and r.get("ok") and r["label"].split("-")[0] in ("udp", "xdp")
         and r["ranks"] == ranks and r["mib"] == mib]
    return (g[0] if g else None), (max(e) if e else None)


def cpu_line(rows, ranks, mib):
    """e2e-cpu: gloo's CPU per GB and the least of ESA's switch configurations'."""
    g = [cpu_per_gb(derived(r)) for r in rows if r.get("available") and r.get("ok")
         and r["label"] == "gloo" and r["ranks"] == ranks and r["mib"] == mib]
    e = [(cpu_per_gb(derived(r)), r["label"]) for r in rows if r.get("available")
         and r.get("ok") and r["label"].split("-")[0] in ("udp", "xdp")
         and r["ranks"] == ranks and r["mib"] == mib]
    if not g or not e:
        return "e2e-cpu: ranks=%d mbytes=%d: no CPU figures to compare" % (ranks, mib)
    return ("e2e-cpu: ranks=%d mbytes=%d gloo_s_per_GB=%.2f esa_s_per_GB=%.2f ratio=%.2f "
            "(%s)" % (ranks, mib, g[0], min(e)[0], min(e)[0] / g[0], min(e)[1]))


def hosts_line(rows, ranks, mib):
    """e2e-hosts (e2e.sh -T): e2e-cpu without the switch's programs' run time,
    which a switch box of its own would take off the hosts."""
    g = [cpu_per_gb(derived(r)) for r in rows if r.get("available") and r.get("ok")
         and r["label"] == "gloo" and r["ranks"] == ranks and r["mib"] == mib]
    e = [(cpu_per_gb(d) - d["switch"], d["switch"], r["label"])
         for r, d in ((r, derived(r)) for r in rows if r.get("available") and r.get("ok")
                      and r["label"].split("-")[0] in ("udp", "xdp")
                      and r["ranks"] == ranks and r["mib"] == mib)
         if d["switch"] is not None]
    if not g or not e:
        return "e2e-hosts: ranks=%d mbytes=%d: no CPU figures to compare" % (ranks, mib)
    h, sw, lab = min(e)
    return ("e2e-hosts: ranks=%d mbytes=%d gloo_s_per_GB=%.2f esa_s_per_GB=%.2f "
            "ratio=%.2f (%s; the switch's programs' %.2f s/GB left out)"
            % (ranks, mib, g[0], h, h / g[0], lab, sw))


def plot(rows, d):
    """DIR/e2e.dat (a block per configuration and rank count) and e2e.png."""
    labels = sorted({r["label"] for r in rows if r.get("available")},
                    key=lambda s: (s != "gloo", s))
    ranks = sorted({r["ranks"] for r in rows})
    with open(os.path.join(d, "e2e.dat"), "w") as f:
        for w in ranks:
            for lab in labels:
                f.write("# ranks %d %s\n" % (w, lab))
                for r in sorted((r for r in rows if r.get("available") and r.get("ok")
                                 and r["label"] == lab and r["ranks"] == w),
                                key=lambda r: r["mib"]):
                    f.write("%d %.3f\n" % (r["mib"], derived(r)["MBps"]))
                f.write("\n\n")
    gp = os.path.join(HERE, "plots", "e2e.gp")
    try:
        subprocess.run(["gnuplot", "-e", "dir='%s'; labels='%s'; ranks='%s'"
                        % (d, " ".join(labels), " ".join(map(str, ranks))), gp],
                       check=True)
        return os.path.join(d, "e2e.png")
    except (OSError, subprocess.CalledProcessError) as e:
        print("e2e: no plot: %s" % e, file=sys.stderr)
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--rate", help="the links' tbf rate, if shaped")
    ap.add_argument("--mtu", type=int)
    ap.add_argument("--rounds", type=int, default=1, help="e2e.sh -R: the sweep's rounds")
    ap.add_argument("--ranks", type=int, help="the summary's point (4, or the "
                    "most ranks measured)")
    ap.add_argument("--mbytes", type=int, help="the summary's point (16, or the "
                    "largest size measured)")
    a = ap.parse_args()
    every = load(os.path.join(a.dir, "results.jsonl"))
    if not every:
        print("e2e: no results in %s" % a.dir, file=sys.stderr)
        return 1
    rows = fastest(every)
    if a.ranks is None:
        a.ranks = 4 if any(r["ranks"] == 4 for r in rows) else max(r["ranks"] for r in rows)
    if a.mbytes is None:
        a.mbytes = 16 if any(r["mib"] == 16 for r in rows) else max(r["mib"] for r in rows)
    text = fmt(table(rows))
    notes = [
        "MB = 2^20 bytes; MB/s/rank: the tensor's size / the slowest rank's time per "
        "allreduce;",
        "kpps sw: packets into the switch's ports per second; host s/GB: the ranks' "
        "CPU (user+sys,",
        "getrusage) per GB of tensor reduced (every rank's); PS s/GB: esa-ps's; kernel "
        "s/GB: the rest",
        "of the machine's busy time (its CPUs' time but idle) but other processes': the "
        "kernel's threads",
        "and softirq outside our processes; CPU s/GB: the three; switch s/GB (-T): the "
        "switch's programs'",
        "run time (bpf_stats), wherever they ran (mostly in the ranks' sends); in switch: "
        "chunks whose sum",
        "came from the switch (rank 0); other: other processes' share of the machine; "
        "idle: the",
        "machine's idle share, starred under %.0f%% (CPU-bound: the cell measured the "
        "CPU, not the" % (100 * CPU_BOUND_IDLE),
        "network); check: every element of every sum compared with the exact sum.",
        "cells under %.0f%% idle (CPU-bound): %d of %d" % (
            100 * CPU_BOUND_IDLE, len(cpu_bound(rows)),
            len([r for r in rows if r.get("available")])),
    ]
    head = "e2e: allreduce of float32 tensors%s%s%s" % (
        ", links shaped to %s (tbf)" % a.rate if a.rate else "",
        ", MTU %d" % a.mtu if a.mtu else "",
        ", each cell the fastest of %d rounds" % a.rounds if a.rounds > 1 else "")
    report = "\n".join([head, text, ""] + notes)
    print(report)
    png = plot(rows, a.dir)
    g, e = best(rows, a.ranks, a.mbytes)
    lines = []
    if png:
        lines.append("plot: %s" % png)
    if g and e:
        lines.append("e2e: ESA's best configuration at %d ranks, %d MB: %s" %
                     (a.ranks, a.mbytes, e[1]))
        lines.append(cpu_line(rows, a.ranks, a.mbytes))
        if any(derived(r)["switch"] is not None for r in rows if r.get("available")):
            lines.append(hosts_line(rows, a.ranks, a.mbytes))
        lines.append("e2e: ranks=%d mbytes=%d%s gloo_MBps=%.1f esa_MBps=%.1f ratio=%.2f"
                     % (a.ranks, a.mbytes, " link=%s" % a.rate if a.rate else "",
                        g, e[0], e[0] / g))
    else:
        lines.append("e2e: ranks=%d mbytes=%d: no %s result to compare" %
                     (a.ranks, a.mbytes, "gloo" if not g else "ESA"))
    print("\n".join(lines))
    with open(os.path.join(a.dir, "report.txt"), "w") as f:
        f.write(report + "\n" + "\n".join(lines) + "\n")
    wrong = [r for r in every if r.get("available") and not r.get("ok")]
    for r in wrong:
        for err in r.get("errors", [])[:5]:
            print("e2e: WRONG %d ranks %d MB %s: %s" % (r["ranks"], r["mib"], r["label"], err),
                  file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
