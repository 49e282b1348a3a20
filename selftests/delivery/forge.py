#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""forge.py IFACE KEY=VALUE...: a hostile host's ESA frames, sent raw
(AF_PACKET) out of IFACE, any source MAC, address and port.

Keys (defaults in brackets): smac [IFACE's], dmac, src, sport [7680], dst,
dport [7680], type (data result partial collision ack fetch, or a number),
flags [0], prio [0], job, rank [0xffff], bitmap [1 << rank, or 0],
seq [0], count [values], values [256], reason [0], resv [0], val [1]
(every value), n [1] frames with seq, seq + 1, ..., gap [0] seconds
between frames.  Prints the number of frames sent.
"""
import os
import socket
import struct
import sys
import time



def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s & 0xffff) + (s >> 16)
    s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "pylib"))
import esa_wire  # noqa: E402  (the wire format, from the UAPI header)

TYPES, VERSION, HDR = esa_wire.TYPES, esa_wire.VERSION, esa_wire.HDR


def frame(o, seq):
    nvals = int(o.get("values", 256))
    rank = int(o.get("rank", "0xffff"), 0)
    t = o.get("type", "data")
    t = TYPES[t] if t in TYPES else int(t, 0)
    bitmap = int(o.get("bitmap", str((1 << rank) if rank < 64 else 0)), 0)
    count = int(o.get("count", 0 if t == 6 else nvals))
    body = b"" if t == 6 else struct.pack("<%di" % nvals,
                                          *([int(o.get("val", 1))] * nvals))
    esa = HDR.pack(int(o.get("version", VERSION)), t,
                      int(o.get("flags", "0"), 0),
                      int(o.get("prio", 0)), int(o["job"]), rank, bitmap,
                      seq & 0xffffffff, count, int(o.get("reason", 0)),
                      int(o.get("resv", 0))) + body
    udp = struct.pack("!HHHH", int(o.get("sport", 7680)),
                      int(o.get("dport", 7680)), 8 + len(esa), 0) + esa
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     socket.inet_aton(o["src"]), socket.inet_aton(o["dst"]))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return mac(o["dmac"]) + mac(o["smac"]) + b"\x08\x00" + ip + udp


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ifname = sys.argv[1]
    o = dict(a.split("=", 1) for a in sys.argv[2:])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    o.setdefault("smac", ":".join("%02x" % b for b in s.getsockname()[4]))
    seq, n, gap = int(o.get("seq", "0"), 0), int(o.get("n", "1")), float(o.get("gap", "0"))
    for i in range(n):
        s.send(frame(o, seq + i))
        if gap:
            time.sleep(gap)
    print(n)


if __name__ == "__main__":
    main()
