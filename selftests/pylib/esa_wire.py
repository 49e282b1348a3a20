# SPDX-License-Identifier: GPL-2.0
"""esa_wire: the ESA wire format for the tests' Python scripts, read from
its one definition, include/uapi/linux/esa.h: ESA_VERSION, the packet types
(enum esa_type), the flags (ESA_F_*) and the header's layout, whose size is
checked against ESA_HDR_LEN.  Never a guess: a frame of another version is
one the switch drops.

The header is found two directories up from this file: in the tree
(selftests/pylib/), and in the test VM, where vmtest.sh copies this file
into /esa/ beside its scripts and the header into /include/uapi/linux/."""
import os
import re
import struct

UAPI = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "..", "..", "include", "uapi", "linux", "esa.h")

# version type flags prio job rank bitmap seq count reason resv
# (struct esa_hdr, network order)
HDR = struct.Struct("!BBBBHHQIHBB")
RANK_NONE = 0xffff


def _parse(path):
    with open(path) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    defs = dict(re.findall(r"^#define\s+(ESA_\w+)\s+(0x[0-9a-fA-F]+|\d+)\b",
                           text, flags=re.M))
    enum = re.search(r"enum esa_type\s*\{(.*?)\};", text, flags=re.S)
    if "ESA_VERSION" not in defs or "ESA_HDR_LEN" not in defs or not enum:
        raise SystemExit("esa_wire: no ESA_VERSION, ESA_HDR_LEN or enum "
                         "esa_type in " + path)
    types, n = {}, -1
    for item in enum.group(1).split(","):
        m = re.match(r"\s*ESA_T_(\w+)\s*(?:=\s*(\d+))?\s*$", item)
        if not m:
            continue
        n = int(m.group(2)) if m.group(2) else n + 1
        types[m.group(1).lower()] = n
    return {k: int(v, 0) for k, v in defs.items()}, types


_DEFS, TYPES = _parse(UAPI)
VERSION = _DEFS["ESA_VERSION"]
FLAGS = {k[len("ESA_F_"):].lower(): v for k, v in _DEFS.items()
         if k.startswith("ESA_F_") and k != "ESA_F_MASK"}
if HDR.size != _DEFS["ESA_HDR_LEN"]:
    raise SystemExit("esa_wire: the header layout is %d bytes, ESA_HDR_LEN %d"
                     % (HDR.size, _DEFS["ESA_HDR_LEN"]))
