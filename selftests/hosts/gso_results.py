#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""gso_results.py FROM TO JOB WORKERS VALUES N: N RESULT copies of job JOB
(chunks 1..N, every one of WORKERS ranks in, VALUES values each) from FROM
(IP:PORT, the switch's) to TO (IP:PORT, the PS), in one UDP GSO send: on
loopback the receiver gets them whole, as GRO hands a socket with UDP_GRO
results coalesced.  Exit status 0 when the kernel took the send."""
import socket
import struct
import sys

HDR = struct.Struct("!BBBBHHQIHBB")
RESULT, RANK_NONE = 2, 0xffff
UDP_SEGMENT = 103


def uapi_version():
    """ESA_VERSION from the UAPI header, never a guess."""
    import os
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "../../include/uapi/linux/esa.h")
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) >= 3 and w[:2] == ["#define", "ESA_VERSION"]:
                return int(w[2])
    raise SystemExit("no ESA_VERSION in " + path)


def addr(s):
    ip, port = s.rsplit(":", 1)
    return ip, int(port)


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    frm, to = addr(sys.argv[1]), addr(sys.argv[2])
    job, workers, nv, n = (int(x) for x in sys.argv[3:7])
    v = uapi_version()
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
