#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""pyfiles.py YNL_DIR SPEC: the files (one a line) that Debian's python3
needs to run the kernel's ynl CLI (YNL_DIR/cli.py) on SPEC with -S, for
the test VM's initramfs (selftests/vm/vmtest.sh): the interpreter's own
modules, those the CLI and its library import, and PyYAML.  It runs the
CLI up to where it would talk to the kernel (the host has no esa family),
then lists every module loaded.
"""
import os
import sys

ynl_dir, spec = sys.argv[1], sys.argv[2]
sys.path.insert(0, ynl_dir)
sys.argv = ['cli.py', '--spec', spec, '--no-schema', '--output-json',
            '--do', 'job-get', '--json', '{"id": 1}']
# What cli.py and lib/ynl.py use on the way to and from the kernel.
import argparse, json, json.decoder, json.encoder, pprint, time  # noqa
import ipaddress, uuid, random, socket, struct, collections  # noqa
import enum, functools, importlib, yaml  # noqa
# And selftests/delivery/fanout_probe.py with selftests/pylib/esa_wire.py.
import select, re  # noqa
import runpy
try:
    runpy.run_path(os.path.join(ynl_dir, 'cli.py'), run_name='__main__')
except BaseException:
    pass
files = set()
for mod in list(sys.modules.values()):
    f = getattr(mod, '__file__', None)
    if not f or f.startswith(ynl_dir) or not f.startswith('/usr/'):
        continue
    files.add(os.path.realpath(f))
    # A package's __init__ is not enough for its submodules' imports.
    if os.path.basename(f) == '__init__.py':
        files.add(os.path.dirname(os.path.realpath(f)) + '/')
for f in sorted(files):
    print(f)
