#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""gso_results.py FROM TO JOB WORKERS VALUES N: N RESULT copies of job JOB
(chunks 1..N, every one of WORKERS ranks in, VALUES values each) from FROM
(IP:PORT, the switch's) to TO (IP:PORT, the PS), in one UDP GSO send: on
loopback the receiver gets them whole, as GRO hands a socket with UDP_GRO
results coalesced.  Exit status 0 when the kernel took the send."""
import os
import socket
import struct
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "pylib"))
import esa_wire  # noqa: E402  (the wire format, from the UAPI header)

HDR, RANK_NONE = esa_wire.HDR, esa_wire.RANK_NONE
RESULT = esa_wire.TYPES["result"]
UDP_SEGMENT = 103


def addr(s):
    ip, port = s.rsplit(":", 1)
    return ip, int(port)


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    frm, to = addr(sys.argv[1]), addr(sys.argv[2])
    job, workers, nv, n = (int(x) for x in sys.argv[3:7])
    v = esa_wire.VERSION
    pkts = [HDR.pack(v, RESULT, 0, 0, job, RANK_NONE, (1 << workers) - 1, seq,
                     nv, 0, 0) + struct.pack("<%di" % nv, *([seq] * nv))
            for seq in range(1, n + 1)]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(frm)
    seg = len(pkts[0])
    s.sendmsg([b"".join(pkts)],
              [(socket.IPPROTO_UDP, UDP_SEGMENT, struct.pack("H", seg))], 0, to)


if __name__ == "__main__":
    main()
