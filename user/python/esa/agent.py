# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""esa-agent's client: a rank asks the job agent on the switch's box for its
job (docs/agent.md).

    from esa import agent
    a = agent.Client("10.255.0.1:7681", "/etc/esa/agent.key")
    job = a.join(group, world=3, rank=0, addr="10.9.1.2:6001")
    # job: {"job": 101, "switch": "10.255.0.1:7680", "ps": ..., "values": 256,
    #       "window": 64, "max-prio": 3, "heartbeat": 2000, ...}
    beats = agent.Heartbeat(a, group, rank, job)     # a thread, until stop()
    ...
    beats.stop(); a.release(group, rank, job["job"])

Every request is one UDP datagram of text lines signed with HMAC-SHA256
under the key shared with the agent, with the time and a fresh nonce; the
agent's answers are signed the same way and carry the request's nonce.
esa.ddp.register() does all of this from torchrun's environment.
"""
import hashlib
import hmac
import os
import secrets
import socket
import stat
import threading
import time

__all__ = ["Client", "Heartbeat", "AgentError", "load_key", "PORT", "build", "parse"]

PORT = 7681
MAX = 4096
MAGIC = "esa-agent 1 "


class AgentError(RuntimeError):
    """The agent refused (reason: its word, e.g. "policy"; why: its line), or
    did not answer in time (reason "timeout")."""

    def __init__(self, reason, why):
        super().__init__("esa-agent: %s: %s" % (reason, why))
        self.reason = reason
        self.why = why


def load_key(path):
    """The key of a key file: hex digits (16 to 64 bytes), not open to group
    or others (as esa-agent and esa-ps require)."""
    st = os.stat(path)
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise AgentError("key", "key file %s is open to group or others (chmod 600 %s)"
                         % (path, path))
    with open(path) as f:
        text = f.read().strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if not 16 <= len(key) <= 64:
        raise AgentError("key", "key file %s: not 16 to 64 bytes in hex digits" % path)
    return key


def build(kind, fields, key):
    """The datagram of a message: its lines, then the mac of them."""
    text = MAGIC + kind + "\n" + "".join("%s %s\n" % (k, v) for k, v in fields)
    mac = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
    return (text + "mac " + mac + "\n").encode()


def parse(data, key):
    """(type, fields, verified) of a datagram; ValueError if it is none."""
    text = data.decode("ascii")
    if not text.startswith(MAGIC) or not text.endswith("\n"):
        raise ValueError("not an esa-agent message")
    lines = text[len(MAGIC):-1].split("\n")
    kind, fields, verified = lines[0], {}, False
    for i, line in enumerate(lines[1:]):
        k, _, v = line.partition(" ")
        if k == "mac":
            signed = text[:text.index("\nmac ") + 1].encode()
            good = hmac.new(key, signed, hashlib.sha256).hexdigest()
            verified = i == len(lines) - 2 and hmac.compare_digest(good, v)
            break
        fields[k] = v
    return kind, fields, verified


def _addr(s, port):
    host, _, p = s.rpartition(":") if ":" in s else (s, "", "")
    return (host or s, int(p) if p else port)


class Client:
    """The agent at `agent` ("HOST[:PORT]", port 7681), with the key of
    key_file (or `key`, bytes)."""

    def __init__(self, agent, key_file=None, key=None, timeout=1.0):
        self.agent = _addr(agent, PORT)
        self.key = key if key is not None else load_key(key_file)
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.connect(self.agent)
        self._lock = threading.Lock()

    def local_ip(self):
        """This host's address on the route to the agent (the switch's box)."""
        return self.sock.getsockname()[0]

    def close(self):
        self.sock.close()

    def request(self, kind, **fields):
        """One request and its answer: (type, fields), type "ok" or "wait";
        AgentError if refused or unanswered within the timeout."""
        nonce = secrets.token_hex(16)
        items = [("ts", int(time.time() * 1000)), ("nonce", nonce)]
        items += [(k.replace("_", "-"), v) for k, v in fields.items() if v is not None]
        data = build(kind, items, self.key)
        with self._lock:
            try:
                self.sock.send(data)
            except OSError as e:        # an ICMP error of an earlier request, say
                raise AgentError("timeout", "cannot send to %s:%d: %s"
                                 % (self.agent + (e.strerror,)))
            deadline = time.monotonic() + self.timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AgentError("timeout", "no answer from %s:%d in %.1f s"
                                     % (self.agent + (self.timeout,)))
                self.sock.settimeout(left)
                try:
                    got = self.sock.recv(MAX + 1)
                except socket.timeout:
                    continue
                except ConnectionRefusedError:
                    raise AgentError("timeout", "nothing listens at %s:%d" % self.agent)
                try:
                    rtype, rf, verified = parse(got, self.key)
                except (ValueError, UnicodeDecodeError):
                    continue
                if rf.get("nonce") != nonce:
                    continue            # an answer to an earlier request
                if not verified:
                    if rf.get("reason") == "bad-mac":
                        raise AgentError("bad-mac", rf.get("why", "") + " (and its answer "
                                         "is not signed with our key either)")
                    continue
                if rtype == "refused":
                    raise AgentError(rf.get("reason", "?"), rf.get("why", ""))
                return rtype, rf

    def _until_ok(self, kind, timeout, **fields):
        deadline = time.monotonic() + timeout
        last, pause = "no answer", 0.05
        while time.monotonic() < deadline:
            try:
                rtype, rf = self.request(kind, **fields)
                if rtype == "ok":
                    return rf
                last = rf.get("why", rtype)
            except AgentError as e:
                if e.reason != "timeout":
                    raise
                last = e.why
            time.sleep(pause)
            pause = min(0.5, pause * 2)
        raise AgentError("timeout", "%s for %.0f s: %s" % (kind, timeout, last))

    def join(self, group, world, rank, addr, job=None, max_prio=None, slots=None,
             timeout=120.0):
        """Check in as rank of group (32 hex digits, the same for every rank)
        in a world of `world` ranks, this rank at addr ("IP:PORT"), until the
        job is registered and its PS serves it: the agent's answer (job,
        serial, workers, switch, ps, values, window, max-prio, lease,
        heartbeat, dead-after), numbers as ints."""
        rf = self._until_ok("join", timeout, group=group, world=world, rank=rank, addr=addr,
                            job=job, max_prio=max_prio, slots=slots)
        return {k: int(v) if v.isdigit() else v for k, v in rf.items() if k != "nonce"}

    def beat(self, group, rank, job):
        """Say this rank lives: the ranks not yet released."""
        rtype, rf = self.request("beat", group=group, rank=rank, job=job)
        return int(rf.get("left", 0))

    def release(self, group, rank, job, timeout=30.0):
        """This rank is done with the job (deleted when every rank is)."""
        rf = self._until_ok("release", timeout, group=group, rank=rank, job=job)
        return int(rf.get("left", 0))


class Heartbeat(threading.Thread):
    """Beats for a rank every job["heartbeat"] ms until stop(); a missed
    answer is tried again at the next beat.  `lost` is the agent's refusal
    if it no longer knows the job."""

    def __init__(self, client, group, rank, job):
        super().__init__(name="esa.agent", daemon=True)
        self.client, self.group, self.rank, self.job = client, group, rank, job["job"]
        self.interval = job.get("heartbeat", 2000) / 1000.0
        self.lost = None
        self.beats = 0
        self._stop_ev = threading.Event()
        self.start()

    def run(self):
        while not self._stop_ev.wait(self.interval):
            try:
                self.client.beat(self.group, self.rank, self.job)
                self.beats += 1
            except AgentError as e:
                if e.reason != "timeout":
                    self.lost = e

    def stop(self):
        self._stop_ev.set()
        self.join()
