#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Checks of the Prometheus exporters against the counters they export,
with Prometheus's own parser (Debian's python3-prometheus-client):

    prom_check.py switch STATS.json PROM     esactl -j stats show / -o prom
    prom_check.py ps PS.json PROM            esa-ps -j / GET /metrics
    prom_check.py workers JOBS.json PROM     esa-jobs -j / --metrics-file
    prom_check.py python PREFIX              Python workers: metrics() / stats()
    prom_check.py agent AGENT.json PROM      esa-agent -j / GET /metrics

Each prints what it compared, or what differs, and exits 0 or 1.  Every
text must parse, every family have HELP (a text of its own, not its name:
what prom.h falls back to for a counter added without one) and TYPE (never
"unknown"), its samples together, names and labels as Prometheus's rules say; counters end
in _total, histograms' buckets are cumulative and end at +Inf = _count.
"""
import json
import re
import sys

from prometheus_client.parser import text_string_to_metric_families

NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class Bad(Exception):
    pass


def parse(text):
    """{sample name: {frozenset(labels): value}}, after the format checks."""
    heads = re.findall(r"^# (HELP|TYPE) (\S+)", text, re.M)
    for kind in ("HELP", "TYPE"):
        names = [n for k, n in heads if k == kind]
        if len(names) != len(set(names)):
            raise Bad("a family's %s twice (its samples not together)" % kind)
    samples, seen = {}, set()
    for fam in text_string_to_metric_families(text):
        if fam.type == "unknown" or not fam.documentation:
            raise Bad("%s: no TYPE or HELP" % fam.name)
        if fam.documentation in (fam.name, fam.name + "_total"):
            raise Bad("%s: no help text of its own (names.c, ps_metrics.c)" % fam.name)
        if fam.name in seen:
            raise Bad("%s: family split" % fam.name)
        seen.add(fam.name)
        if fam.type == "histogram":
            check_hist(fam)
        for s in fam.samples:
            if not NAME.match(s.name) or not all(LABEL.match(k) for k in s.labels):
                raise Bad("bad name %s%s" % (s.name, s.labels))
            if fam.type == "counter" and not s.name.endswith("_total"):
                raise Bad("counter %s without _total" % s.name)
            samples.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value
    return samples


def check_hist(fam):
    series = {}
    for s in fam.samples:
        key = frozenset((k, v) for k, v in s.labels.items() if k != "le")
        series.setdefault(key, []).append(s)
    for key, ss in series.items():
        buckets = [s for s in ss if s.name.endswith("_bucket")]
        count = [s.value for s in ss if s.name.endswith("_count")]
        bounds = [float(s.labels["le"]) for s in buckets]
        vals = [s.value for s in buckets]
        if (bounds != sorted(bounds) or bounds[-1] != float("inf") or
                vals != sorted(vals) or count != [vals[-1]]):
            raise Bad("%s%s: buckets not cumulative to +Inf = _count" % (fam.name, dict(key)))


def value(samples, name, **labels):
    key = frozenset((k, str(v)) for k, v in labels.items())
    try:
        return samples[name][key]
    except KeyError:
        raise Bad("%s%s missing" % (name, labels)) from None


def cumulative(hist):
    acc, out = 0, []
    for h in hist:
        acc += h
        out.append(acc)
    return out


def hist_equal(samples, name, hist, sum_s, **labels):
    """The histogram name{labels} is exactly hist (per bucket, not
    cumulative: bucket i at most 2^i us, the last open) and sum_s."""
    want = cumulative(hist)
    got = [value(samples, name + "_bucket", le="%.9g" % (2.0 ** i * 1e-6), **labels)
           for i in range(len(hist) - 1)]
    got.append(value(samples, name + "_bucket", le="+Inf", **labels))
    if got != want or value(samples, name + "_count", **labels) != want[-1]:
        raise Bad("%s%s: buckets %s, want %s" % (name, labels, got, want))
    if abs(value(samples, name + "_sum", **labels) - sum_s) > 1e-9 * max(1, sum_s):
        raise Bad("%s%s: sum %s, want %s" % (name, labels, value(samples, name + "_sum",
                                                                 **labels), sum_s))


def counters(samples, prefix, row, drops_name, **labels):
    """Every counter of a JSON row against PREFIX_NAME_total{labels}, the
    drop_X ones against drops_name{labels, reason=X}; how many."""
    n = 0
    for k, v in row.items():
        if not isinstance(v, int) or isinstance(v, bool):
            continue
        if k.startswith("drop_"):
            got = value(samples, drops_name, reason=k[5:], **labels)
        else:
            got = value(samples, "%s_%s_total" % (prefix, k), **labels)
        if got != v:
            raise Bad("%s %s %s: %s in Prometheus, %s in JSON" % (prefix, labels, k, got, v))
        n += 1
    return n


def switch(stats, text):
    st, samples = json.load(open(stats)), parse(open(text).read())
    n = 0
    for j in st["jobs"]:
        row = {k: v for k, v in j.items() if k not in ("job", "module")}
        n += counters(samples, "esa_switch", row, "esa_switch_drops_total", job=j["job"])
    nojob = {k: v for k, v in st["nojob"].items() if k != "module"}
    if any(nojob.values()):
        n += counters(samples, "esa_switch", nojob, "esa_switch_drops_total")
    if not st["jobs"] or not any(j["completed"] for j in st["jobs"]):
        raise Bad("no job completed a chunk in the switch: nothing compared")
    return "%d counters of %d jobs and of no job equal" % (n, len(st["jobs"]))


def ps(psjson, text):
    st, samples = json.load(open(psjson)), parse(open(text).read())
    n, hists = 0, 0
    for j in st["jobs"]:
        row = {k: v for k, v in j.items()
               if k not in ("job", "cached", "pending", "chunk_ns_sum", "chunk_hist")}
        n += counters(samples, "esa_ps", row, "esa_ps_drops_total", job=j["job"])
        for g in ("cached", "pending"):
            if value(samples, "esa_ps_%s_chunks" % g, job=j["job"]) != j[g]:
                raise Bad("job %d %s" % (j["job"], g))
        hist_equal(samples, "esa_ps_chunk_seconds", j["chunk_hist"], j["chunk_ns_sum"] * 1e-9,
                   job=j["job"])
        hists += sum(j["chunk_hist"])
    # no job's row: the counters that moved (ps_metrics.c prints only those)
    moved = {k: v for k, v in st["nojob"].items() if v}
    n += counters(samples, "esa_ps", moved, "esa_ps_drops_total")
    if value(samples, "esa_ps_jobs") != len(st["jobs"]):
        raise Bad("esa_ps_jobs")
    if not hists:
        raise Bad("the PS finished no chunk: its histogram is empty, nothing compared")
    return "%d counters, the gauges and %d chunk times of %d jobs equal" % (
        n, hists, len(st["jobs"]))


WORKER_JSON = ("tx_packets", "tx_resends", "rx_results", "rx_from_ps", "rx_duplicates",
               "overflows", "redos", "scale_chunks", "fetch_answered", "rx_invalid",
               "rx_untrusted", "fetch_refused", "icmp_errors", "xdp_drops")


def workers(jobsjson, text):
    st, samples = json.load(open(jobsjson)), parse(open(text).read())
    n = 0
    for j in st["jobs"]:
        ranks = range(j["workers"])
        for k in WORKER_JSON:
            got = sum(value(samples, "esa_worker_%s_total" % k, job=j["job"], rank=r)
                      for r in ranks)
            if got != j[k]:
                raise Bad("job %d %s: %s in Prometheus, %s in JSON" % (j["job"], k, got, j[k]))
            n += 1
        cnt = sum(value(samples, "esa_worker_chunk_rtt_seconds_count", job=j["job"], rank=r)
                  for r in ranks)
        tot = sum(value(samples, "esa_worker_chunk_rtt_seconds_sum", job=j["job"], rank=r)
                  for r in ranks)
        if not cnt or abs(tot * 1e6 / cnt - j["rtt_us"]) > 0.051:
            raise Bad("job %d: mean round trip %s us from the histogram, %s in JSON"
                      % (j["job"], cnt and tot * 1e6 / cnt, j["rtt_us"]))
    return "%d counters summed over the ranks and the mean round trip of %d jobs equal" % (
        n, len(st["jobs"]))


def python(prefix):
    import esa
    import numpy as np

    ws = [esa.Worker(switch="10.255.0.1", job=3, rank=r, workers=2, values=64,
                     local="10.9.%d.2:6003" % h, ps="10.9.250.2:9000", run=7,
                     netns="/run/netns/%s-h%d" % (prefix, h)) for r, h in enumerate((5, 6))]
    for it in range(4):
        x = [np.arange(20000, dtype=np.int32) * (r + it + 1) for r in range(2)]
        reqs = [w.allreduce_start(x[r]) for r, w in enumerate(ws)]
        done = [False, False]
        while not all(done):
            for r, w in enumerate(ws):
                if not done[r]:
                    w.progress(1)
                    done[r] = reqs[r].test()
        want = np.arange(20000, dtype=np.int32) * (2 * it + 3)
        if not all(np.array_equal(v, want) for v in x):
            raise Bad("a wrong sum")
    samples = parse(esa.metrics(ws))
    n, chunks = 0, 0
    for r, w in enumerate(ws):
        st, hist = w.stats(), w.rtt_hist()
        for k, v in st.items():
            if k in ("rtt_us_sum", "rtt_samples"):
                continue
            name = "esa_worker_%s" % k
            if name + "_total" in samples:
                name += "_total"
            if value(samples, name, job=3, rank=r) != v:
                raise Bad("rank %d %s" % (r, k))
            n += 1
        if sum(hist) != st["rtt_samples"] or not st["rtt_samples"]:
            raise Bad("rank %d: histogram of %d, rtt_samples %d" % (r, sum(hist),
                                                                    st["rtt_samples"]))
        hist_equal(samples, "esa_worker_chunk_rtt_seconds", hist, st["rtt_us_sum"] * 1e-6,
                   job=3, rank=r)
        chunks += sum(hist)
    path = "/tmp/%s-workers.prom" % prefix
    esa.write_metrics(path, ws)
    if parse(open(path).read()) != samples:
        raise Bad("write_metrics wrote other numbers")
    for w in ws:
        w.close()
    return "%d counters and 2 round-trip histograms (%d chunks) equal stats() and rtt_hist()" % (
        n, chunks)


def agent(agentjson, text):
    st, samples = json.load(open(agentjson)), parse(open(text).read())
    n = 0

    def eq(name, want, **labels):
        nonlocal n
        got = value(samples, name, **labels)
        if got != want:
            raise Bad("%s%s: %s in Prometheus, %s in JSON" % (name, labels, got, want))
        n += 1
    for k, v in st["by_type"].items():
        eq("esa_agent_requests_total", v, type=k)
    eq("esa_agent_requests_total", st["requests"] - sum(st["by_type"].values()), type="other")
    for k, v in st["answers"].items():
        eq("esa_agent_answers_total", v, result=k)
    for k, v in st["refused"].items():
        eq("esa_agent_refusals_total", v, reason=k)
    if sum(st["answers"].values()) != st["requests"] or \
            st["answers"]["refused"] != sum(st["refused"].values()):
        raise Bad("the answers %s do not add up to the requests %d and the refusals"
                  % (st["answers"], st["requests"]))
    eq("esa_agent_jobs", st["jobs_live"])
    eq("esa_agent_groups_joining", st["groups_joining"])
    eq("esa_agent_registrations_total", st["jobs_registered"])
    for cause in ("released", "timed_out", "gone"):
        eq("esa_agent_deletions_total", st["jobs_" + cause], cause=cause)
    for cause in ("expired", "failed", "dropped"):
        eq("esa_agent_groups_ended_total", st["groups_" + cause], cause=cause)
    eq("esa_agent_reloads_total", st["reloads"], result="ok")
    eq("esa_agent_reloads_total", st["reload_failures"], result="failed")
    hist_equal(samples, "esa_agent_join_seconds", st["join_hist"], st["join_ns_sum"] * 1e-9)
    if not sum(st["join_hist"]) or not st["reloads"] or not st["answers"]["refused"] or \
            not st["groups_joining"] or not st["jobs_released"]:
        raise Bad("no registration, reload, refusal, group joining or release: not all "
                  "compared (%s)" % json.dumps(st))
    return "%d counters and gauges and the join-time histogram (%d registered) equal" % (
        n, sum(st["join_hist"]))


def main():
    what = sys.argv[1]
    try:
        msg = {"switch": switch, "ps": ps, "workers": workers, "python": python,
               "agent": agent}[what](
            *sys.argv[2:])
    except Bad as e:
        print(e)
        return 1
    print(msg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
