#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""esa-agent on the switch's box, asked by ranks on hosts behind it (suite
70-agent).  The suite builds the topology (selftests/hosts/topo.sh: switch
$P-sw, hosts $P-h1..h4 and $P-h250) and loads the switch; this starts the
agent and esa-ps --agent, and opens each client's socket in its host's
namespace (setns), so that every request comes from that host's address.

The agent listens on every address (0.0.0.0) and is asked at 10.255.0.1,
the switch's service address: it must answer from the address asked (a
client takes answers only from there), not from the route's.  Hosts 1, 2,
4 and 250 are in networks the policy allows, host 3 is not.
Policy: job ids 20-29, max-prio 3, homes of 32 slots at most, 4 ranks and 4
jobs at most.  Checked: a job of two ranks registered with their addresses
and learnt by esa-ps, and an allreduce through it; every bad or hostile
request refused with its reason, changing nothing (the state file, the
switch's jobs, the groups joining: a group under attack then completes
with its own ranks); releases, vanished ranks and groups that never
complete; the agent killed (SIGKILL) with a job live and started again:
beats go on, a request from before the kill is not taken again, and the
job is still released; reloads (SIGHUP): a policy tightened refuses what it
allowed before and drops a group joining, a live job outside it runs on
with the timers its ranks were told, a new job gets the new ones, and a
file that does not parse or changes where the agent listens changes
nothing.  Prints TAP.
"""
import argparse
import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "user", "python"))
import esa                      # noqa: E402
from esa import agent           # noqa: E402

AGENT = ("10.255.0.1", 7681)
CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)
n = failed = 0


def ok(cond, what):
    global n, failed
    n += 1
    failed += not cond
    print("%sok %d - %s" % ("" if cond else "not ", n, what), flush=True)
    return cond


def wait_for(cond, seconds):
    """cond() true within seconds (a bound, not a timing the test needs)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


class Env:
    def __init__(self, a):
        self.a = a
        self.b = a.build
        self.sw = a.prefix + "-sw"
        self.dir = a.dir
        self.key_path = os.path.join(a.dir, "key")
        self.agent = None
        self.ps = None

    @contextlib.contextmanager
    def ns(self, host):
        """This thread in host's network namespace."""
        me = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        fd = os.open("/run/netns/%s-h%s" % (self.a.prefix, host), os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET):
                raise OSError(ctypes.get_errno(), "setns")
            yield
        finally:
            libc.setns(me, CLONE_NEWNET)
            os.close(fd)
            os.close(me)

    def client(self, host):
        with self.ns(host):
            return agent.Client("%s:%d" % AGENT, key=self.key, timeout=2.0)

    def raw(self, host, data):
        """data sent from host: (type, fields, verified) of the answer."""
        with self.ns(host):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with s:
            s.connect(AGENT)
            s.send(data)
            s.settimeout(3)
            try:
                return agent.parse(s.recv(8192), self.key)
            except socket.timeout:
                return ("none", {}, False)

    def esactl(self, *args):
        return subprocess.run(["nsenter", "--net=/run/netns/" + self.sw, self.b + "/esactl",
                               "-d", self.a.pin] + list(args), capture_output=True, text=True)

    def switch_jobs(self):
        """{id: [rank addresses]} of the switch's registry."""
        r = self.esactl("-j", "job", "show")
        if r.returncode:
            raise RuntimeError("esactl job show: " + r.stderr)
        return {j["id"]: [x["addr"] for x in j["ranks"]] for j in json.loads(r.stdout)}

    def start_agent(self):
        log = open(os.path.join(self.dir, "agent.log"), "a")
        out = open(os.path.join(self.dir, "agent.out"), "a")
        before = self.log("agent.log").count("listening")
        self.agent = subprocess.Popen(["nsenter", "--net=/run/netns/" + self.sw,
                                       self.b + "/esa-agent", "-c", self.conf, "-j"],
                                      stdout=out, stderr=log)
        return wait_for(lambda: self.log("agent.log").count("listening") > before, 10)

    def start_ps(self):
        log = open(os.path.join(self.dir, "ps.log"), "w")
        self.ps = subprocess.Popen(["ip", "netns", "exec", self.a.prefix + "-h250",
                                    self.b + "/esa-ps", "-s", "10.255.0.1", "--agent",
                                    "10.255.0.1", "--key-file", self.key_path, "--ps",
                                    "10.9.250.2:9000"], stdout=subprocess.DEVNULL, stderr=log)

    def log(self, name):
        try:
            with open(os.path.join(self.dir, name)) as f:
                return f.read()
        except OSError:
            return ""

    def counters(self):
        """The agent's counters now (SIGUSR1: one JSON line more)."""
        lines = len(self.log("agent.out").splitlines())
        self.agent.send_signal(signal.SIGUSR1)
        wait_for(lambda: len(self.log("agent.out").splitlines()) > lines, 10)
        return json.loads(self.log("agent.out").splitlines()[-1])

    def snapshot(self):
        """What a refused request must not change."""
        c = self.counters()
        return (self.log("agent.state"), self.switch_jobs(), c["jobs_live"],
                c["groups_joining"])

    def close(self):
        for p in (self.agent, self.ps):
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()


def signed(e, kind, fields, key=None, ts=None, nonce=None):
    items = [("ts", ts if ts is not None else int(time.time() * 1000)),
             ("nonce", nonce or os.urandom(16).hex())] + list(fields)
    return agent.build(kind, items, key or e.key)


def refused(e, host, data, reason, what, before=None):
    """data from host is refused for reason, and changes nothing."""
    rtype, f, verified = e.raw(host, data)
    good = rtype == "refused" and f.get("reason") == reason and verified
    same = before is None or e.snapshot() == before
    return ok(good and same, "%s: refused, %s (%s)%s" % (
        what, reason, f.get("why", rtype), "; nothing changed" if before else "")
        if good and same else "%s: %s %s %s, changed: %s" % (what, rtype, f, verified, not same))


def test_cli(e):
    b = e.b + "/esa-agent"
    r = subprocess.run([b, "--version"], capture_output=True, text=True)
    ok(r.returncode == 0 and r.stdout.startswith("esa-agent "), "--version: %s"
       % r.stdout.strip())
    r = subprocess.run([b, "--help"], capture_output=True, text=True)
    ok(r.returncode == 0 and "--config" in r.stdout, "--help: the usage, status 0")
    bad = [("no key", ["ps 10.9.250.2:9000", "jobs 1-2", "allow 10.0.0.0/8"], 'no "key FILE"'),
           ("a network without its bits", ["key %s" % e.key_path, "allow 10.9.0.0"],
            'allow "10.9.0.0" is not IP/BITS'),
           ("an unknown key", ["key %s" % e.key_path, "frob 1"], 'unknown key "frob"'),
           ("no job ids", ["key %s" % e.key_path, "ps 10.9.250.2:9000", "allow 10.0.0.0/8"],
            'no "jobs LO-HI"')]
    for what, lines, want in bad:
        path = os.path.join(e.dir, "bad.conf")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        r = subprocess.run([b, "-c", path, "--check"], capture_output=True, text=True)
        ok(r.returncode == 1 and len(r.stderr.splitlines()) == 1 and want in r.stderr,
           "a configuration with %s: one line, status 1 (%s)" % (what, r.stderr.strip()))
    loose = os.path.join(e.dir, "loose.key")
    with open(loose, "w") as f:
        f.write("00" * 32 + "\n")
    os.chmod(loose, 0o644)
    with open(os.path.join(e.dir, "loose.conf"), "w") as f:
        f.write(open(e.conf).read().replace(e.key_path, loose))
    r = subprocess.run([b, "-c", os.path.join(e.dir, "loose.conf"), "--check"],
                       capture_output=True, text=True)
    ok(r.returncode == 1 and "chmod 600" in r.stderr,
       "a key file others can read: refused (%s)" % r.stderr.strip())
    r = subprocess.run([b, "-c", e.conf, "--check"], capture_output=True, text=True)
    ok(r.returncode == 0 and not r.stderr, "--check of the suite's configuration: status 0")


def join_all(e, clients, group, addrs, **opts):
    """Every rank's join in a thread of its own: the answers (or errors)."""
    res = [None] * len(clients)

    def one(i):
        try:
            res[i] = clients[i].join(group, len(clients), i, addrs[i], timeout=30, **opts)
        except agent.AgentError as x:
            res[i] = x
    ts = [threading.Thread(target=one, args=(i,)) for i in range(len(clients))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return res


def allreduce(e, job, ranks):
    """An int32 allreduce of the job's ranks through the switch: exact?"""
    import numpy as np
    ws = [esa.Worker(netns="/run/netns/%s-h%s" % (e.a.prefix, h), switch=job["switch"],
                     job=job["job"], rank=r, workers=len(ranks), local=addr, ps=job["ps"],
                     values=job["values"], window=job.get("window", 32), give_up_ms=20000)
          for r, (h, addr) in enumerate(ranks)]
    xs = [np.arange(20000, dtype=np.int32) * (r + 1) for r in range(len(ranks))]
    want = sum(x.astype(np.int64) for x in xs)
    errs = []

    def one(w, x):          # each worker driven by a thread of its own
        try:
            w.allreduce(x)
        except esa.EsaError as x:
            errs.append(x)
    ts = [threading.Thread(target=one, args=wx) for wx in zip(ws, xs)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for w in ws:
        w.close()
    return not errs and all((x == want).all() for x in xs)


def test_job(e):
    c1, c2 = e.client(1), e.client(2)
    g = os.urandom(16).hex()
    a1, a2 = "10.9.1.2:7001", "10.9.2.2:7001"
    rtype, f = c1.request("join", group=g, world=2, rank=0, addr=a1)
    ok(rtype == "wait" and "1 of 2" in f.get("why", ""),
       "rank 0 of 2 joins: wait (%s)" % f.get("why"))
    r1, r2 = join_all(e, [c1, c2], g, [a1, a2])
    good = isinstance(r1, dict) and isinstance(r2, dict) and r1["job"] == r2["job"]
    ok(good and 20 <= r1["job"] <= 29 and r1["workers"] == 2 and
       r1["switch"] == "10.255.0.1:7680" and r1["ps"] == "10.9.250.2:9000" and
       r1["max-prio"] == 3 and r1["window"] == 32 and r1["values"] == 256,
       "both ranks joined: one job in the agent's ids, the switch, the PS and the policy's "
       "settings (%s)" % (r1,))
    if not good:
        return None
    jid = r1["job"]
    ok(e.switch_jobs().get(jid) == [a1, a2], "job %d on the switch with the ranks' addresses "
       "(esactl job show: %s)" % (jid, e.switch_jobs().get(jid)))
    ok("job %d ps 10.9.250.2:9000 workers %s %s" % (jid, a1, a2) in e.log("ps.log"),
       "esa-ps learnt job %d from the agent before the ranks were answered" % jid)
    ok(allreduce(e, r1, [(1, a1), (2, a2)]), "an int32 allreduce of the two ranks through "
       "job %d: exact" % jid)
    beats = [agent.Heartbeat(c, g, i, r) for i, (c, r) in enumerate(((c1, r1), (c2, r2)))]
    return dict(job=r1, group=g, clients=(c1, c2), addrs=(a1, a2), beats=beats)


def test_hostile(e, j1):
    g1, jid = j1["group"], j1["job"]["job"]
    before = e.snapshot()
    other = bytes(range(32))
    refused(e, 1, signed(e, "beat", [("group", g1), ("rank", 0), ("job", jid)], key=other),
            "bad-mac", "a beat signed with another key", before)
    data = signed(e, "beat", [("group", g1), ("rank", 0), ("job", jid)])
    rtype, f, v = e.raw(1, data)
    ok(rtype == "ok" and v, "a good beat: ok")
    before = e.snapshot()
    refused(e, 1, data, "replay", "the same beat again", before)
    refused(e, 1, signed(e, "beat", [("group", g1), ("rank", 0), ("job", jid)],
                         ts=int(time.time() * 1000) - 60000), "stale",
            "a beat stamped a minute ago", before)
    refused(e, 1, b"hello\n", "malformed", "a datagram of another protocol", before)
    refused(e, 1, b"esa-agent 1 beat\nts 1\n", "malformed", "no mac", before)
    refused(e, 1, signed(e, "frob", []), "malformed", "an unknown request", before)
    refused(e, 1, signed(e, "join", [("world", 2), ("rank", 0), ("addr", "10.9.1.2:7009")]),
            "malformed", "a join without its group", before)
    refused(e, 1, b"x" * 5000, "oversized", "5000 bytes", before)
    g = os.urandom(16).hex()

    def join(host, rank, addr, world=2, extra=()):
        return signed(e, "join", [("group", g), ("world", world), ("rank", rank),
                                  ("addr", addr)] + list(extra))
    refused(e, 3, join(3, 0, "10.9.3.2:7001"), "network", "a join from a network the "
            "policy does not allow", before)
    refused(e, 4, join(4, 0, "10.9.4.2:7001", extra=[("job", 5)]), "policy",
            "job 5, outside the ids 20-29", before)
    refused(e, 4, join(4, 0, "10.9.4.2:7001", extra=[("max-prio", 7)]), "policy",
            "max-prio 7, above the policy's 3", before)
    refused(e, 4, join(4, 0, "10.9.4.2:7001", extra=[("slots", 64)]), "policy",
            "a home of 64 slots, above the policy's 32", before)
    refused(e, 4, join(4, 0, "10.9.4.2:7001", world=5), "policy", "a world of 5 ranks, above "
            "the policy's 4", before)
    return g, join


def test_group_attacked(e, j1, g, join):
    """A group with its rank 0 joined, attacked; then it completes right."""
    rtype, f, _ = e.raw(4, join(4, 0, "10.9.4.2:7001"))
    ok(rtype == "wait", "rank 0 of a new group (host 4) joins: %s" % f.get("why"))
    before = e.snapshot()
    a0 = j1["addrs"][0]
    refused(e, 1, join(1, 1, "10.9.1.2:7002", world=3), "world", "rank 1 says the world is 3",
            before)
    refused(e, 1, join(1, 2, "10.9.1.2:7002"), "world", "rank 2 of a world of 2", before)
    refused(e, 1, join(1, 1, "10.9.2.2:7002"), "address", "host 1 claims host 2's address",
            before)
    refused(e, 1, join(1, 1, a0), "address", "rank 1 claims the address of rank 0 of job %d"
            % j1["job"]["job"], before)
    refused(e, 4, join(4, 1, "10.9.4.2:7001"), "address", "rank 1 claims rank 0's address",
            before)
    refused(e, 1, join(1, 1, "10.9.1.2:7002", extra=[("max-prio", 2)]), "mismatch",
            "rank 1 asks another max-prio than rank 0", before)
    refused(e, 4, join(4, 0, "10.9.4.2:7003"), "address", "rank 0 joins again from another "
            "port", before)
    c4, c1 = e.client(4), e.client(1)
    r = join_all(e, [c4, c1], g, ["10.9.4.2:7001", "10.9.1.2:7002"])
    jid = r[0]["job"] if isinstance(r[0], dict) else None
    ok(jid is not None and e.switch_jobs().get(jid) == ["10.9.4.2:7001", "10.9.1.2:7002"],
       "then its ranks join: job %s registered with the group's own two addresses (%s)"
       % (jid, r))
    return jid


def test_refusals_of_jobs(e, j1):
    g1, jid = j1["group"], j1["job"]["job"]
    before = e.snapshot()
    refused(e, 1, signed(e, "beat", [("group", g1), ("rank", 0), ("job", 29)]), "unknown-job",
            "a beat for a job the agent does not have", before)
    refused(e, 4, signed(e, "beat", [("group", g1), ("rank", 0), ("job", jid)]), "address",
            "host 4 beats as rank 0 of job %d" % jid, before)
    refused(e, 2, signed(e, "ps-poll", [("ps", "10.9.250.2:9000"), ("have", "-")]), "address",
            "host 2 polls as the PS", before)
    r = e.esactl("job", "add", "27", "ps", "10.9.250.2:9000", "workers", "10.9.4.2:7100")
    g = os.urandom(16).hex()
    res = join_all(e, [e.client(4), e.client(2)], g, ["10.9.4.2:7010", "10.9.2.2:7010"],
                   job=27)
    ok(r.returncode == 0 and all(isinstance(x, agent.AgentError) and x.reason == "register"
                                 and "job 27 is taken" in x.why for x in res),
       "a group asking for job 27, taken by esactl job add: both ranks refused (%s)" % res[0])
    e.esactl("job", "delete", "27")


def test_ends(e, j1, j2):
    c1, c2 = j1["clients"]
    jid = j1["job"]["job"]
    for b in j1["beats"]:
        b.stop()
    ok(not any(b.lost for b in j1["beats"]) and all(b.beats > 0 for b in j1["beats"]),
       "job %d's ranks beat all along (%s beats)" % (jid, [b.beats for b in j1["beats"]]))
    left = [c1.release(j1["group"], 0, jid), c2.release(j1["group"], 1, jid)]
    # the log line comes just after the deletion: wait for both
    gone = wait_for(lambda: jid not in e.switch_jobs() and "job %d deleted: every rank "
                    "released it" % jid in e.log("agent.log"), 10)
    ok(left == [1, 0] and gone, "both ranks release job %d: deleted on the switch (left %s)"
       % (jid, left))
    ok(wait_for(lambda: "job %d ended" % jid in e.log("ps.log"), 10),
       "esa-ps drops job %d at its next poll" % jid)
    ok(" %d ps " % jid not in e.log("agent.state"), "the state file no longer has job %d" % jid)
    ok(wait_for(lambda: j2 not in e.switch_jobs() and "job %s deleted: 2 ranks silent for "
                "4000 ms" % j2 in e.log("agent.log"), 20),
       "job %s, whose ranks never beat: deleted after dead-after (4 s)" % j2)
    c4 = e.client(4)
    g = os.urandom(16).hex()
    rtype, f = c4.request("join", group=g, world=2, rank=0, addr="10.9.4.2:7020")
    ok(rtype == "wait" and wait_for(lambda: e.counters()["groups_expired"] >= 1, 20),
       "a group whose rank 1 never comes: dropped after join-timeout (4 s)")
    c = e.counters()
    ok(c["jobs_released"] == 1 and c["jobs_timed_out"] == 1 and c["jobs_live"] == 0,
       "counters: 1 released, 1 timed out, none live (%s)" % {k: c[k] for k in (
           "jobs_registered", "jobs_released", "jobs_timed_out", "groups_expired")})


def test_gone(e):
    """A job deleted on the switch by hand: the agent forgets it, esa-ps drops it."""
    c1, c2 = e.client(1), e.client(2)
    g = os.urandom(16).hex()
    r = join_all(e, [c1, c2], g, ["10.9.1.2:7050", "10.9.2.2:7050"])
    if not ok(isinstance(r[0], dict), "a job to delete by hand (%s)" % r[0]):
        return
    jid = r[0]["job"]
    ended = e.log("ps.log").count("job %d ended" % jid)
    e.esactl("job", "delete", str(jid))
    ok(wait_for(lambda: "job %d was deleted on the switch, not by the agent: forgotten" % jid
                in e.log("agent.log") and e.log("ps.log").count("job %d ended" % jid) > ended,
                20) and e.counters()["jobs_gone"] == 1,
       "esactl job delete %d: the agent forgets it, esa-ps drops it" % jid)
    try:
        c1.beat(g, 0, jid)
        ok(False, "a beat for it is refused")
    except agent.AgentError as x:
        ok(x.reason == "unknown-job", "a beat for it is refused: %s" % x)


def test_full(e):
    c4 = e.client(4)
    got = []
    for k in range(5):
        try:
            got.append(c4.request("join", group=os.urandom(16).hex(), world=2, rank=0,
                                  addr="10.9.4.2:%d" % (7030 + k))[0])
        except agent.AgentError as x:
            got.append(x.reason)
    ok(got == ["wait"] * 4 + ["full"], "max-jobs 4: four groups joining, the fifth refused, "
       "full (%s)" % got)


def test_restart(e):
    c1, c2 = e.client(1), e.client(2)
    g = os.urandom(16).hex()
    addrs = ["10.9.1.2:7040", "10.9.2.2:7040"]
    r = join_all(e, [c1, c2], g, addrs)
    if not ok(isinstance(r[0], dict), "a job for the restart (%s)" % r[0]):
        return
    jid = r[0]["job"]
    beats = [agent.Heartbeat(c, g, i, r[i]) for i, c in enumerate((c1, c2))]
    old = signed(e, "beat", [("group", g), ("rank", 0), ("job", jid)])
    ended = e.log("ps.log").count("job %d ended" % jid)
    e.agent.kill()
    e.agent.wait()
    ok(e.switch_jobs().get(jid) == addrs, "the agent killed (SIGKILL): job %d stays on the "
       "switch" % jid)
    n0 = [b.beats for b in beats]
    ok(e.start_agent() and "state: job %d of group %s goes on" % (jid, g[:8]) in
       e.log("agent.log"), "started again, it takes job %d back from its state file" % jid)
    ok(wait_for(lambda: all(b.beats >= k + 2 for b, k in zip(beats, n0)), 15) and
       not any(b.lost for b in beats), "the ranks' beats go on with the new agent")
    refused(e, 1, old, "stale", "a beat signed before the kill, sent after it")
    rtype, f = c1.request("join", group=g, world=2, rank=0, addr=addrs[0])
    ok(rtype == "ok" and int(f["job"]) == jid, "rank 0 joins again: the same job %d" % jid)
    ok(e.log("ps.log").count("job %d ended" % jid) == ended,
       "esa-ps kept job %d through the restart" % jid)
    for b in beats:
        b.stop()
    left = [c1.release(g, 0, jid), c2.release(g, 1, jid)]
    ok(left == [1, 0] and wait_for(lambda: jid not in e.switch_jobs(), 10) and
       e.counters()["jobs_released"] == 1,
       "both release it: deleted, counted by the new agent as released")


def reload(e, text):
    """The configuration rewritten, then SIGHUP: the agent's last reload line
    once its counters show the reload (done or refused)."""
    with open(e.conf, "w") as f:
        f.write(text)
    c = e.counters()
    k = c.get("reloads", 0) + c.get("reload_failures", 0)
    e.agent.send_signal(signal.SIGHUP)

    def done():
        if e.agent.poll() is not None:
            return True
        c = e.counters()
        return c.get("reloads", 0) + c.get("reload_failures", 0) > k
    wait_for(done, 10)
    lines = [x for x in e.log("agent.log").splitlines() if x.startswith("esa-agent: reload: ")]
    return lines[-1][len("esa-agent: reload: "):] if lines else ""


def test_reload(e):
    """A policy tightened by a reload: what it allowed before is refused, a
    group joining it refuses is dropped, a live job outside it runs on."""
    slow = e.conf_text.replace("heartbeat 300", "heartbeat 1500")
    line = reload(e, slow)
    if not ok(e.agent.poll() is None and line.startswith("job ids 20-29, max-prio 3, slots 32"),
              "SIGHUP: the agent reads its configuration again (%s)" % (
                  line or "it died: %s" % e.agent.returncode)):
        return
    c1, c2, c4 = e.client(1), e.client(2), e.client(4)
    g = os.urandom(16).hex()
    addrs = ["10.9.1.2:7060", "10.9.2.2:7060"]
    r = join_all(e, [c1, c2], g, addrs, job=24)
    if not ok(isinstance(r[0], dict) and r[0]["job"] == 24 and r[0]["heartbeat"] == 1500,
              "job 24 asked for and registered, its ranks to beat every 1500 ms (%s)" % r[0]):
        return
    beats = [agent.Heartbeat(c, g, i, r[i]) for i, c in enumerate((c1, c2))]
    ended = e.log("ps.log").count("job 24 ended")
    gj = os.urandom(16).hex()

    def join(host, rank, addr, group=gj, world=2, extra=()):
        return signed(e, "join", [("group", group), ("world", world), ("rank", rank),
                                  ("addr", addr)] + list(extra))
    rtype, f, _ = e.raw(4, join(4, 0, "10.9.4.2:7061", extra=[("max-prio", 3)]))
    ok(rtype == "wait", "a group asking max-prio 3, as the policy allows, joins: %s"
       % f.get("why", rtype))
    c0 = e.counters()
    tight = (slow.replace("jobs 20-29", "jobs 20-22").replace("max-prio 3", "max-prio 1")
             .replace("allow 10.9.2.0/24\n", "").replace("slots 32", "slots 16")
             .replace("heartbeat 1500", "heartbeat 300").replace("dead-after 4000",
                                                                 "dead-after 1000"))
    line = reload(e, tight)
    c = e.counters()
    ok(c["reloads"] == c0["reloads"] + 1 and line.startswith(
        "job ids 20-22, max-prio 1, slots 16, max-workers 4, 3 networks") and
       line.endswith("1 job live (outside the policy: 24)"),
       "SIGHUP with a policy tightened: ids 20-22, max-prio 1, slots 16, host 2's network "
       "gone, dead-after 1000 ms (%s)" % line)
    ok(c["groups_joining"] == c0["groups_joining"] - 1 and
       c["groups_dropped"] == c0["groups_dropped"] + 1 and
       "reload: group %s (1 of 2 ranks joined) dropped: max-prio 3 is above the policy's 1"
       % gj[:8] in e.log("agent.log"), "the group joining that it no longer allows is dropped")
    before = e.snapshot()
    refused(e, 4, join(4, 0, "10.9.4.2:7061", extra=[("max-prio", 3)]), "policy",
            "its rank 0 joins again, as allowed before", before)
    refused(e, 4, join(4, 0, "10.9.4.2:7062", group=os.urandom(16).hex(),
                       extra=[("job", 24)]), "policy", "a new group asking job 24", before)
    refused(e, 2, join(2, 0, "10.9.2.2:7063", group=os.urandom(16).hex()), "network",
            "a new group from host 2, a rank of job 24", before)
    n0 = [b.beats for b in beats]
    ok(wait_for(lambda: all(b.beats >= k + 3 for b, k in zip(beats, n0)), 30) and
       not any(b.lost for b in beats) and e.switch_jobs().get(24) == addrs and
       e.counters()["jobs_live"] == 1,
       "job 24 runs on outside the policy (its id, max-prio 3, home of 32, rank 1 on host 2): "
       "beats every 1500 ms taken though dead-after is now 1000 ms, from host 2 too (%s)"
       % [b.lost for b in beats])
    r = join_all(e, [c4, e.client(1)], os.urandom(16).hex(), ["10.9.4.2:7064", "10.9.1.2:7064"])
    new = r[0] if isinstance(r[0], dict) else {}
    ok(20 <= new.get("job", 0) <= 22 and new.get("max-prio") == 1 and
       new.get("window") == 16 and new.get("heartbeat") == 300 and
       new.get("dead-after") == 1000, "a new job gets the new policy: id, max-prio 1, window "
       "16, heartbeat 300, dead-after 1000 (%s)" % (new or r[0]))
    if new:
        ok(wait_for(lambda: "job %d deleted: 2 ranks silent for 1000 ms" % new["job"]
                    in e.log("agent.log"), 20), "its ranks silent: deleted after 1000 ms")
    bad = tight + "max-prio 0\nfrob 1\n"
    line = reload(e, bad)
    gb = os.urandom(16).hex()
    rtype, f, _ = e.raw(4, join(4, 0, "10.9.4.2:7065", group=gb, extra=[("max-prio", 1)]))
    ok(line.endswith(': unknown key "frob"; nothing changed') and rtype == "wait" and
       e.counters()["reload_failures"] == 1,
       "a file that does not parse: one line says why (%s); max-prio 1 is still allowed" % line)
    moved = tight.replace("listen 0.0.0.0:7681", "listen 0.0.0.0:7682").replace(
        "state %s/agent.state" % e.dir, "state %s/elsewhere.state" % e.dir)
    line = reload(e, moved)
    ok(line == "listen and state cannot change without a restart; nothing changed" and
       c1.beat(g, 0, 24) == 2, "listen and state changed: refused in one line (%s); it "
       "answers where it listened" % line)
    for b in beats:
        b.stop()
    kept = e.log("ps.log").count("job 24 ended") == ended
    left = [c1.release(g, 0, 24), c2.release(g, 1, 24)]
    ok(kept and left == [1, 0] and wait_for(lambda: 24 not in e.switch_jobs(), 10),
       "job 24's ranks release it, host 2's too: deleted (esa-ps kept it through the reloads)")
    with open(e.conf, "w") as f:
        f.write(e.conf_text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--pin", required=True)
    ap.add_argument("--build", default="build")
    e = Env(ap.parse_args())
    print("TAP version 13", flush=True)
    subprocess.run([e.b + "/esa-agent", "--new-key", e.key_path], check=True)
    e.key = agent.load_key(e.key_path)
    e.conf = os.path.join(e.dir, "agent.conf")
    e.conf_text = """listen 0.0.0.0:7681
key {d}/key
state {d}/agent.state
pin {pin}
ps 10.9.250.2:9000
jobs 20-29
allow 10.9.1.0/24
allow 10.9.2.0/24
allow 10.9.4.0/24
allow 10.9.250.0/24
max-prio 3
slots 32
max-workers 4
max-jobs 4
heartbeat 300
dead-after 4000
join-timeout 4000
replay-window 10000
""".format(d=e.dir, pin=e.a.pin)
    with open(e.conf, "w") as f:
        f.write(e.conf_text)
    try:
        test_cli(e)
        ok(e.start_agent(), "esa-agent starts in the switch's namespace")
        e.start_ps()
        j1 = test_job(e)
        if j1:
            e.j1 = j1
            g, join = test_hostile(e, j1)
            j2 = test_group_attacked(e, j1, g, join)
            test_refusals_of_jobs(e, j1)
            test_ends(e, j1, j2)
            test_gone(e)
            test_full(e)
            wait_for(lambda: e.counters()["groups_joining"] == 0, 20)
            test_restart(e)
            test_reload(e)
        c = e.counters()
        print("# counters: %s" % json.dumps(c), flush=True)
    finally:
        for b in getattr(e, "j1", {}).get("beats", []):
            b.stop()
        e.close()
        if failed:
            for name in ("agent.log", "ps.log"):
                for line in e.log(name).splitlines()[-40:]:
                    print("# %s: %s" % (name, line))
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
