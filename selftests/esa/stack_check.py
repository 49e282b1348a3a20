#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check a BPF object's worst call chain against the verifier's stack limit.

    stack_check.py [-v] OBJECT...

The verifier adds up the frames of every chain of BPF-to-BPF calls (each
frame rounded up to 32 bytes) and refuses the program when a chain passes
512 bytes ("combined stack size of N calls is M. Too large").  A program
that calls a module's kfuncs cannot be loaded on a host without the
module, so this reads the frames from the object instead: a function's
frame is the deepest r10 offset its code uses (an upper bound of what the
verifier counts), its calls are the relocations of its call instructions
to functions of the object, and the functions it passes as callbacks
(bpf_loop()'s: a 64-bit load of a function's address), whose frames the
verifier adds to the chain as it does a call's.  Prints each program's worst chain; exits 1
if one passes the limit.  Needs llvm-objdump.
"""
import re
import subprocess
import sys

LIMIT = 512
FUNC = re.compile(r"^([0-9a-f]+) <([A-Za-z_][\w.]*)>:")
SECTION = re.compile(r"^Disassembly of section (\S+):")
R10 = re.compile(r"r10 - (\d+)")
RELOC = re.compile(r"R_BPF_64_32\s+(\S+)")
LDIMM = re.compile(r"=\s*(\d+) ll$")
FUNCREF = re.compile(r"R_BPF_64_64\s+(\S+)")


def parse(obj):
    """{function: (section, frame bytes, set of callees by name)}"""
    out = subprocess.run(["llvm-objdump", "-dr", "--no-show-raw-insn", obj],
                         check=True, capture_output=True, text=True).stdout
    funcs, at, sec, cur, after_call, imm = {}, {}, None, None, False, None
    refs = []	# (function, section, offset): addresses loaded by functions
    for line in out.splitlines():
        m = SECTION.match(line)
        if m:
            sec, cur = m.group(1), None
            continue
        m = FUNC.match(line)
        if m and not m.group(2).startswith("LBB"):
            cur = m.group(2)
            funcs[cur] = [sec, 0, set()]
            at[(sec, int(m.group(1), 16))] = cur
            continue
        if cur is None:
            continue
        for d in R10.findall(line):
            funcs[cur][1] = max(funcs[cur][1], int(d))
        m = RELOC.search(line)
        if m and after_call:
            funcs[cur][2].add(m.group(1))
        m = FUNCREF.search(line)
        if m and imm is not None:
            refs.append((cur, m.group(1), imm))
        after_call = re.search(r"\scall\s", line) is not None
        m = LDIMM.search(line)
        imm = int(m.group(1)) if m else None
    for f, target, off in refs:	# a section and offset, or a function
        callee = at.get((target, off), target if off == 0 else None)
        if callee in funcs:
            funcs[f][2].add(callee)
    return {f: (s, d, c) for f, (s, d, c) in funcs.items()}


def frame(depth):
    return (max(depth, 1) + 31) // 32 * 32


def worst(funcs, f, seen=()):
    """The deepest chain from f: (bytes, [functions])."""
    best = (0, [])
    for c in funcs[f][2]:
        if c in funcs and c not in seen:
            best = max(best, worst(funcs, c, seen + (f,)))
    return frame(funcs[f][1]) + best[0], [f] + best[1]


def main(argv):
    verbose = "-v" in argv
    objs = [a for a in argv if a != "-v"]
    if not objs:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    bad = 0
    for obj in objs:
        funcs = parse(obj)
        for f, (sec, depth, _) in sorted(funcs.items()):
            if verbose:
                print("%s: %s (%s) frame %d" % (obj, f, sec, frame(depth)))
            if sec == ".text":
                continue	# not a program: reached through one
            total, chain = worst(funcs, f)
            over = total > LIMIT
            bad += over
            print("%s: %s: %d of %d bytes of stack: %s%s" %
                  (obj, f, total, LIMIT,
                   " -> ".join("%s %d" % (c, frame(funcs[c][1])) for c in chain),
                   " TOO LARGE" if over else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
