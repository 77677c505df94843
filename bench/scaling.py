#!/usr/bin/env python3
"""Sampling efficiency against the number of sampling threads (issue 15's scaling benchmark).

For each workload and each thread count T (1..N, or the --threads list),
`coral bench` samples the `delay` env (pool topology, 8*T envs, a batch of 4*T,
random policy; the group size and the shard count are the command's defaults,
`auto`, unless --envs-per-group or --shards names one) and, in the same process, steps the same envs in a
plain loop on one thread. The physical limit with T threads is T times that
loop's rate, so

    efficiency = sampled steps per second / (T * plain-loop steps per second)

is measured against a baseline taken in the same run, whatever the machine's
speed. The workloads are the issue's: delay 10 us (std 0) and delay 100 us
(std 100 us, truncated at 0). Each point is the median of --rounds runs.

Writes scaling.dat (a table) and, when gnuplot is there, scaling.png into
--out, and prints a markdown table and one JSON line.

Usage: bench/scaling.py [--coral build/release/apps/coral] [--max-threads N | --threads 1,2,4,8,16]
                        [--envs-per-group auto|K] [--shards auto|S] [--rounds 3] [--seconds 1] [--out docs]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

WORKLOADS = [("delay 10 us", 10.0, 0.0), ("delay 100 +- 100 us", 100.0, 100.0)]


def bench(coral, mean_us, std_us, threads, seconds, envs_per_group, shards):
    """(sampled steps/s, plain-loop steps/s, envs per group, shards) of one run."""
    ideal = threads * 1e6 / mean_us
    steps = max(2000, int(ideal * seconds))
    envs = 8 * threads
    cmd = [coral, "bench", "--env", "delay", "--env-arg", f"mean_us={mean_us}", "--env-arg", f"std_us={std_us}",
           "--topology", "pool", "--num-envs", str(envs), "--batch-size", str(envs // 2), "--threads", str(threads),
           "--steps", str(steps), "--baseline-steps", str(max(1000, steps // threads)), "--json"]
    if envs_per_group is not None:
        cmd += ["--envs-per-group", envs_per_group]
    if shards is not None:
        cmd += ["--shards", shards]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"scaling.py: {' '.join(cmd)} failed (exit {done.returncode}):\n{done.stderr.strip()}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    return r["steps_per_second"], r["baseline_steps_per_second"], r["envs_per_group"], r.get("shards", 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--coral", default="build/release/apps/coral")
    p.add_argument("--max-threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--threads", help="comma-separated thread counts to measure instead of 1..--max-threads")
    p.add_argument("--envs-per-group", help="passed to coral bench (default: the command's own, auto)")
    p.add_argument("--shards", help="passed to coral bench (default: the command's own, auto)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=1.0, help="seconds of sampling per run, at the ideal rate")
    p.add_argument("--out", default="docs")
    a = p.parse_args()
    if a.max_threads < 1 or a.rounds < 1 or not a.seconds > 0:
        p.error("--max-threads and --rounds must be at least 1, --seconds positive")
    try:
        counts = [int(t) for t in a.threads.split(",")] if a.threads else list(range(1, a.max_threads + 1))
    except ValueError:
        p.error(f"--threads {a.threads!r} is not a comma-separated list of integers")
    if not counts or min(counts) < 1:
        p.error("--threads must name thread counts of at least 1")
    if not Path(a.coral).is_file():
        p.error(f"--coral {a.coral} is not a file (build the coral target)")

    rows = []
    for name, mean, std in WORKLOADS:
        for t in counts:
            runs = [bench(a.coral, mean, std, t, a.seconds, a.envs_per_group, a.shards) for _ in range(a.rounds)]
            eff = statistics.median(r[0] / (t * r[1]) for r in runs)
            rate = statistics.median(r[0] for r in runs)
            base = statistics.median(r[1] for r in runs)
            group, shards = runs[0][2], runs[0][3]
            rows.append({"workload": name, "threads": t, "envs_per_group": group, "shards": shards,
                         "steps_per_second": rate, "plain_loop_steps_per_second": base, "efficiency": eff})
            print(f"{name:>20} | {t:>3} threads | groups of {group:>3} | {shards:>3} shards | {rate:>12,.0f} steps/s | "
                  f"plain loop {base:>10,.0f} | efficiency {eff:.3f}", flush=True)

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    dat = out / "scaling.dat"
    with dat.open("w") as f:
        f.write("# threads efficiency_delay10 efficiency_delay100sd100\n")
        for t in counts:
            effs = [r["efficiency"] for r in rows if r["threads"] == t]
            f.write(f"{t} " + " ".join(f"{e:.4f}" for e in effs) + "\n")
    print("\n| workload | threads | envs per group | shards | steps/s | plain loop, 1 thread | efficiency |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['workload']} | {r['threads']} | {r['envs_per_group']} | {r['shards']} | {r['steps_per_second']:,.0f} | "
              f"{r['plain_loop_steps_per_second']:,.0f} | {r['efficiency']:.3f} |")
    if shutil.which("gnuplot"):
        script = (f"set terminal pngcairo size 800,500; set output '{out / 'scaling.png'}';"
                  "set xlabel 'sampling threads'; set ylabel 'steps/s / ideal'; set yrange [0:1.1];"
                  f"set key bottom left; set grid; set xtics {1 if max(counts) <= 8 else 2};"
                  f"plot '{dat}' using 1:2 with linespoints title 'delay 10 us',"
                  f" '{dat}' using 1:3 with linespoints title 'delay 100 +- 100 us', 1 title 'ideal' dt 2")
        subprocess.run(["gnuplot", "-e", script], check=False)
    print(json.dumps({"rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
