#!/usr/bin/env python3
"""Per-function difference of two callgrind profiles, per unit of work.

Usage: bench/cgdiff.py SHORT.out LONG.out UNITS [TOP]

For two runs that differ only in length (e.g. `coral bench --steps 40000` and
`--steps 200000`, UNITS = 160000), prints the instructions per unit in all and
for the TOP (default 30) functions that grew most: start-up cancels out.
"""
import sys,re,subprocess
def load(f):
    out=subprocess.run(['callgrind_annotate','--inclusive=no','--threshold=100',f],capture_output=True,text=True).stdout
    d={}
    for line in out.splitlines():
        m=re.match(r'\s*([\d,]+) \([ \d.]+%\)\s+(.*)',line)
        if m and 'PROGRAM TOTALS' not in line:
            d[m.group(2)[:150]]=d.get(m.group(2)[:150],0)+int(m.group(1).replace(',',''))
    return d
a=load(sys.argv[1]); b=load(sys.argv[2]); steps=float(sys.argv[3])
diff={k:(b.get(k,0)-a.get(k,0))/steps for k in set(a)|set(b)}
tot=sum(diff.values()); print('total per step %.0f'%tot)
for k,v in sorted(diff.items(),key=lambda x:-x[1])[:int(sys.argv[4]) if len(sys.argv)>4 else 30]:
    print('%7.1f  %s'%(v,k))
