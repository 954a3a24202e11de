#!/usr/bin/env python3
"""cuobjdump -elf output (stdin) -> the layout lines cudaimage-check writes:
`sm_XX NAME psize=N ord:off:size ...`, one per kernel .nv.info section, sorted."""
import re, sys
out = []; arch = None; cur = None; attr = None
def flush():
    if cur:
        name, params, psize = cur
        ps = ' '.join(f'{o}:{off}:{sz}' for o, off, sz in sorted(params))
        if psize is None:
            psize = max((off + sz for _, off, sz in params), default=0)
        out.append(f'{arch} {name} psize={psize} {ps}')
for line in sys.stdin:
    line = line.rstrip('\n')
    m = re.match(r'^arch = (sm_\d+)', line)
    if m:
        flush(); cur = None; arch = m.group(1); continue
    if line.startswith('.nv.info.'):
        flush(); cur = [line[len('.nv.info.'):], [], None]; continue
    if line and not line.startswith(('\t', ' ')):
        flush(); cur = None; continue
    m = re.match(r'^\tAttribute:\t(\S+)', line)
    if m:
        attr = m.group(1); continue
    if cur and line.startswith('\tValue:'):
        if attr in ('EIATTR_KPARAM_INFO', 'EIATTR_KPARAM_INFO_V2'):
            f = dict((k.strip(), int(v, 16)) for k, v in re.findall(r'(Ordinal|Offset|Size)\s*:\s*(0x[0-9a-f]+)', line))
            cur[1].append((f['Ordinal'], f['Offset'], f['Size']))
        elif attr == 'EIATTR_CBANK_PARAM_SIZE':
            cur[2] = int(line.split('\t')[-1].strip(), 16)
flush()
print('\n'.join(sorted(out)))
