#!/usr/bin/env python3
"""What serving the live view costs a run: `coral bench` with and without
`--dashboard`, alternated on a noisy machine.

Usage: bench/dashboard_cost.py CORAL ROUNDS [BENCH FLAGS ...]

Each round runs `CORAL bench --no-baseline --json FLAGS` twice, in turn
(which one goes first alternates): once plain, once with `--dashboard` and
one client that GETs /state.json once a second, as the page does. Prints
each round's steps/s and ratio (with / without), the CPU time of the live
view's thread (coral-dashboard, from /proc) over the sampler's time, then
the median ratio and the median of each side. On a shared machine the
ratio moves by several percent from round to round; the thread's CPU time
is the cost itself.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import urllib.request


def run(coral, flags, dashboard):
    args = [coral, "bench", "--no-baseline", "--json", *flags]
    if dashboard:
        args.append("--dashboard")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    stop = threading.Event()
    polls = [0]

    cpu_ns = [0]

    def dashboard_cpu_ns():
        for task in os.listdir(f"/proc/{proc.pid}/task"):
            try:
                with open(f"/proc/{proc.pid}/task/{task}/comm") as f:
                    if f.read().strip() != "coral-dashboard":
                        continue
                with open(f"/proc/{proc.pid}/task/{task}/schedstat") as f:
                    return int(f.read().split()[0])
            except OSError:
                pass
        return cpu_ns[0]

    def watch_cpu():
        # Ten times a second, so that the last reading is close to the end
        # of the run (the thread's figures go with the process).
        while not stop.wait(0.1):
            try:
                cpu_ns[0] = dashboard_cpu_ns()
            except OSError:
                return  # the process ended

    def poll(port):
        while not stop.wait(1.0):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/state.json", timeout=5) as r:
                    r.read()
                    polls[0] += 1
            except OSError:
                return  # the sampler ended: the server stopped

    poller = None
    watcher = None
    last = ""
    for line in proc.stdout:
        m = re.match(r"dashboard: http://127\.0\.0\.1:(\d+)/", line)
        if m:
            poller = threading.Thread(target=poll, args=(m.group(1),))
            poller.start()
            watcher = threading.Thread(target=watch_cpu)
            watcher.start()
        if line.strip():
            last = line
    proc.wait()
    stop.set()
    if poller:
        poller.join()
        watcher.join()
    if proc.returncode != 0:
        sys.exit(f"dashboard_cost.py: {' '.join(args)} exited {proc.returncode}")
    result = json.loads(last)
    return result["steps_per_second"], polls[0], cpu_ns[0] * 1e-9 / result["seconds"]


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    coral, rounds, flags = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    plain, served, ratios, cpu = [], [], [], []
    for r in range(rounds):
        order = [False, True] if r % 2 == 0 else [True, False]
        got = {}
        for dashboard in order:
            got[dashboard] = run(coral, flags, dashboard)
        plain.append(got[False][0])
        served.append(got[True][0])
        ratios.append(got[True][0] / got[False][0])
        cpu.append(got[True][2])
        print(f"round {r + 1}: without {got[False][0]:,.0f} steps/s, with {got[True][0]:,.0f} "
              f"({got[True][1]} polls; the live view's thread {100 * got[True][2]:.3f}% of a core): "
              f"ratio {ratios[-1]:.4f}", flush=True)
    print(f"median: without {statistics.median(plain):,.0f}, with {statistics.median(served):,.0f} steps/s; "
          f"ratio {statistics.median(ratios):.4f} (rounds {min(ratios):.4f}-{max(ratios):.4f}); "
          f"the live view's thread: {100 * statistics.median(cpu):.3f}% of a core (at most {100 * max(cpu):.3f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
