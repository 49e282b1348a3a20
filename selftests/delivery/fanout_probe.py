#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""fanout_probe.py KEY=VALUE...: one chunk through the switch, and every copy
of its result that comes back, seen raw.

Sends one DATA frame per rank (AF_PACKET, out of IFACE `send`) for chunk
`seq` of job `job`, each from its rank's MAC, address and UDP port, then
listens on every interface of `listen` (comma-separated) for `wait`
seconds and prints one JSON object: the copies of the chunk's RESULT each
interface received, with their destination MAC, address and UDP port, and
whether their values are the exact sum and their IP and UDP checksums
right (a UDP checksum of 0 is not: GRO cannot coalesce such results).  The test around it says what it
expects (one copy per rank, addressed to it; one to the PS).

Keys: send, listen, dmac (the switch port's MAC), sw (switch address),
job, seq [1], values [256], wait [1.0], and per rank r: rank<r>=MAC/IP:PORT.
"""
import json
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "pylib"))
import esa_wire  # noqa: E402  (the wire format, from the UAPI header)

HDR = esa_wire.HDR
DATA, RESULT = esa_wire.TYPES["data"], esa_wire.TYPES["result"]
ESA_PORT = 7680


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def mac_str(b):
    return ":".join("%02x" % x for x in b)


def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s & 0xffff) + (s >> 16)
    s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def udp_csum_ok(ip, udp):
    """Does the UDP datagram udp of IP header ip carry a checksum, and a
    right one?  0 is none (legal for IPv4, but the kernel's UDP GRO will
    not coalesce such datagrams); summed with its pseudo header, a right
    one leaves 0."""
    if udp[6:8] == b"\0\0":
        return False
    pseudo = ip[12:20] + struct.pack("!BBH", 0, 17, len(udp))
    return csum(pseudo + udp + b"\0" * (len(udp) & 1)) == 0


def data_frame(o, r, rmac, rip, rport, vals):
    nv = len(vals)
    esa = HDR.pack(o["version"], DATA, 0, 0, o["job"], r, 1 << r, o["seq"],
                   nv, 0, 0) + struct.pack("<%di" % nv, *vals)
    udp = struct.pack("!HHHH", rport, ESA_PORT, 8 + len(esa), 0) + esa
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     socket.inet_aton(rip), socket.inet_aton(o["sw"]))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return mac(o["dmac"]) + mac(rmac) + b"\x08\x00" + ip + udp


def parse_result(buf, o):
    """The copy in frame buf, if it is the chunk's RESULT; else None."""
    if len(buf) < 14 + 20 + 8 + HDR.size or buf[12:14] != b"\x08\x00":
        return None
    ip = buf[14:34]
    if ip[9] != 17:
        return None
    udp = buf[34:42]
    sport, dport = struct.unpack("!HH", udp[:4])
    if sport != ESA_PORT:
        return None
    h = HDR.unpack_from(buf, 42)
    if h[1] != RESULT or h[4] != o["job"] or h[7] != o["seq"]:
        return None
    nv = h[8]
    ulen = struct.unpack("!H", udp[4:6])[0]
    vals = struct.unpack_from("<%di" % nv, buf, 42 + HDR.size)
    return {"dmac": mac_str(buf[0:6]), "dst": socket.inet_ntoa(ip[16:20]),
            "dport": dport, "src": socket.inet_ntoa(ip[12:16]),
            "ip_csum_ok": csum(ip) == 0,
            "udp_csum_ok": udp_csum_ok(ip, buf[34:34 + ulen]),
            "sum_ok": list(vals) == o["expect"][:nv]}


def main():
    o = dict(a.split("=", 1) for a in sys.argv[1:])
    if "send" not in o or "listen" not in o:
        sys.exit(__doc__)
    o["job"], o["seq"] = int(o["job"]), int(o.get("seq", "1"))
    o["version"] = esa_wire.VERSION
    nv = int(o.get("values", "256"))
    ranks = sorted((int(k[4:]), v) for k, v in o.items() if k.startswith("rank"))
    listen = o["listen"].split(",")
    socks = {}
    for ifname in listen:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
        s.bind((ifname, 0))
        s.setblocking(False)
        socks[s] = ifname
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((o["send"], 0))
    o["expect"] = [0] * nv
    for r, spec in ranks:
        rmac, addr = spec.split("/")
        rip, rport = addr.split(":")
        vals = [(r + 1) * (i + 1) for i in range(nv)]
        o["expect"] = [a + b for a, b in zip(o["expect"], vals)]
        tx.send(data_frame(o, r, rmac, rip, int(rport), vals))
    got = {ifname: [] for ifname in listen}
    end = time.monotonic() + float(o.get("wait", "1.0"))
    while time.monotonic() < end:
        rd, _, _ = select.select(list(socks), [], [], max(0, end - time.monotonic()))
        for s in rd:
            try:
                buf, addr = s.recvfrom(65536)
            except BlockingIOError:
                continue
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            c = parse_result(buf, o)
            if c:
                got[socks[s]].append(c)
    print(json.dumps(got))


if __name__ == "__main__":
    main()
