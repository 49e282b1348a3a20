#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Check kmod/esa.yaml against the kernel's netlink spec schema and against
include/uapi/linux/esa.h: every attribute, command and constant of the spec
must exist in the header with the same value.

usage: PYTHONPATH=LINUX/tools/net/ynl spec_check.py SPEC HEADER_DIR
(LINUX: a kernel source tree with Documentation/netlink; the spec is
validated against LINUX/Documentation/netlink/PROTOCOL.yaml, so SPEC is
copied next to it first by make kmod-spec-check).
"""
import os
import subprocess
import sys
import tempfile

from lib import SpecFamily


def c_name(*parts):
    return ''.join(parts).upper().replace('-', '_')


def main():
    spec, incdir = sys.argv[1], sys.argv[2]
    fam = SpecFamily(spec)          # validates against the schema
    want = {}
    for aset in fam.attr_sets.values():
        prefix = aset.yaml['name-prefix']
        for attr in aset.attrs.values():
            want[c_name(prefix, attr.name)] = attr.value
    for op in fam.msgs.values():
        want[c_name(fam.yaml['operations']['name-prefix'], op.name)] = \
            op.req_value if op.req_value is not None else op.rsp_value
    for const in fam.consts.values():
        want[c_name('esa-', const['name'])] = const['value']
    want['ESA_GENL_VERSION'] = fam.yaml.get('version', 1)
    strings = {'ESA_GENL_NAME': fam.name}
    for grp in fam.yaml['mcast-groups']['list']:
        strings[c_name(grp['c-define-name'])] = grp['name']

    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, 'c.c')
        with open(src, 'w') as f:
            f.write('#include <stdio.h>\n#include <linux/esa.h>\nint main(void)\n{\n')
            for name in sorted(want):
                f.write(f'\tprintf("{name} %lld\\n", (long long){name});\n')
            for name in sorted(strings):
                f.write(f'\tprintf("{name} %s\\n", {name});\n')
            f.write('\treturn 0;\n}\n')
        exe = os.path.join(tmp, 'c')
        subprocess.run(['gcc', '-I', incdir, src, '-o', exe], check=True)
        got = dict(line.split() for line in
                   subprocess.run([exe], check=True, capture_output=True,
                                  text=True).stdout.splitlines())
    bad = [f'{n}: spec {v}, header {got[n]}' for n, v in sorted(want.items())
           if int(got[n]) != v]
    bad += [f'{n}: spec "{v}", header "{got[n]}"'
            for n, v in sorted(strings.items()) if got[n] != v]
    for b in bad:
        print('spec_check: ' + b)
    print(f'spec_check: {len(want) + len(strings)} names of {os.path.basename(spec)}, '
          f'{len(bad)} differ from the header')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
