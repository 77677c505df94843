#!/usr/bin/env python3
"""Times Google Benchmark binaries against each other on a noisy machine.

Usage: bench/alternate.py ROUNDS FILTER BINARY [BINARY ...]

Runs every binary in turn, ROUNDS times (5 repetitions of at least 0.05 s
each per run, filtered by FILTER), so that a slow minute of the machine hits
all of them alike, and prints per benchmark and binary the minimum, the
first quartile and the median of the CPU times (in the benchmark's unit).
On this shared VM single runs move by up to 30%; compare first quartiles.
"""
import collections
import os
import re
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    pattern, binaries = sys.argv[2], sys.argv[3:]
    try:
        rounds = int(sys.argv[1])
    except ValueError:
        rounds = 0
    if rounds < 1:
        print(f"alternate.py: ROUNDS must be a whole number >= 1, not {sys.argv[1]!r}", file=sys.stderr)
        return 2
    for binary in binaries:
        if not os.access(binary, os.X_OK):
            print(f"alternate.py: {binary!r} is not an executable file", file=sys.stderr)
            return 2
    times = collections.defaultdict(list)
    for _ in range(rounds):
        for binary in binaries:
            run = subprocess.run(
                [binary, f"--benchmark_filter={pattern}", "--benchmark_min_time=0.05",
                 "--benchmark_repetitions=5", "--benchmark_format=csv"],
                capture_output=True, text=True)
            if run.returncode != 0:
                print(f"alternate.py: {binary} exited with {run.returncode}: {run.stderr.strip()}", file=sys.stderr)
                return 1
            out = run.stdout
            for line in out.splitlines():
                fields = line.split(",")
                name = fields[0].strip('"')
                if len(fields) > 4 and "/" in name and not re.search(r"_(mean|median|stddev|cv)$", name):
                    times[(name, binary)].append(float(fields[3]))
    for (name, binary), values in sorted(times.items(), key=lambda kv: (kv[0][0], binaries.index(kv[0][1]))):
        values.sort()
        print(f"{name:34} {binary:40} min {values[0]:8.2f}  p25 {values[len(values) // 4]:8.2f}  "
              f"median {values[len(values) // 2]:8.2f}  n={len(values)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
