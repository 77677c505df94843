#!/usr/bin/env python3
"""Sampling grid in the manner of PufferLib's: the `delay` env with mean step
times from 1 us to 1 ms, standard deviations 0 to 100% of the mean, and 1 to
64 env groups, on 2 sampling threads. Each cell is the pool topology's
throughput as a fraction of the physical limit C / d (C threads, d mean step
time), next to the sync topology's. Writes a markdown table and a PNG chart.

Usage: bench/grid.py [CORAL_BINARY] [OUT_DIR]
"""
import json
import subprocess
import sys
from pathlib import Path

coral = sys.argv[1] if len(sys.argv) > 1 else "build/release/apps/coral"
out = Path(sys.argv[2] if len(sys.argv) > 2 else "docs")
threads = 2
envs_per_group = 4
means_us = [1, 10, 100, 1000]
stds = [0.0, 0.5, 1.0]
group_counts = [1, 4, 16, 64]


def bench(topology, mean, std, groups):
    ideal = threads / (mean * 1e-6)
    steps = max(4000, int(ideal * 0.4))  # about 0.4 s at the ideal rate
    num_envs = groups * envs_per_group
    cmd = [coral, "bench", "--env", "delay", "--env-arg", f"mean_us={mean}",
           "--env-arg", f"std_us={mean * std}", "--topology", topology,
           "--num-envs", str(num_envs), "--envs-per-group", str(envs_per_group),
           "--threads", str(threads), "--steps", str(steps), "--no-baseline", "--json"]
    if topology == "pool":
        cmd += ["--batch-size", str(max(envs_per_group, num_envs // 2))]
    last = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    return json.loads(last)["steps_per_second"] / ideal


rows = []
for mean in means_us:
    for std in stds:
        cells = []
        for g in group_counts:
            sync = bench("sync", mean, std, g)
            pool = bench("pool", mean, std, g) if g > 1 else None  # pool needs 2+ groups
            cells.append((sync, pool))
            print(f"mean {mean} us, std {int(std * 100)}%, {g} groups: sync {sync:.2f}"
                  + (f", pool {pool:.2f}" if pool is not None else ""), flush=True)
        rows.append((mean, std, cells))

out.mkdir(parents=True, exist_ok=True)
lines = ["| mean step | std | " + " | ".join(f"{g} group{'s' if g > 1 else ''} (sync / pool)" for g in group_counts) + " |",
         "|---|---|" + "---|" * len(group_counts)]
for mean, std, cells in rows:
    text = [f"{s:.0%} / " + ("-" if p is None else f"{p:.0%}") for s, p in cells]
    lines.append(f"| {mean} us | {int(std * 100)}% | " + " | ".join(text) + " |")
(out / "sampling_grid.md").write_text(
    "Fraction of the ideal C / d steps per second (C = 2 threads, d = mean step time), "
    f"{envs_per_group} envs per group, pool batch = half the envs. Steps are the env steps the batcher "
    "acted on, the first batch on reset observations included, so runs with many envs and few steps "
    "(the 1 ms rows: 4,000 steps, up to 256 envs) read up to 6% high.\n\n" + "\n".join(lines) + "\n")

data = out / "sampling_grid.dat"
with data.open("w") as f:
    for i, (mean, std, cells) in enumerate(rows):
        f.write(f"# mean {mean} us std {int(std * 100)}%\n")
        for g, (s, p) in zip(group_counts, cells):
            f.write(f"{g} {s:.4f} {p if p is not None else 'NaN'}\n")
        f.write("\n\n")
script = f"""
set terminal pngcairo size 1100,700
set output '{out / "sampling_grid.png"}'
set title 'coral sampling: fraction of the ideal C/d (2 threads, delay env)'
set xlabel 'env groups (4 envs each)'
set ylabel 'fraction of ideal'
set logscale x 2
set yrange [0:1.1]
set key outside right
set grid
plot """ + ", ".join(
    f"'{data}' index {i} using 1:3 with linespoints title 'pool {mean}us {int(std * 100)}%'"
    for i, (mean, std, _) in enumerate(rows) if std in (0.0, 1.0))
script += ", " + ", ".join(
    f"'{data}' index {i} using 1:2 with lines dashtype 2 title 'sync {mean}us {int(std * 100)}%'"
    for i, (mean, std, _) in enumerate(rows) if std == 1.0)
subprocess.run(["gnuplot"], input=script, text=True, check=True)
print("wrote", out / "sampling_grid.md", "and", out / "sampling_grid.png")
