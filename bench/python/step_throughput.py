#!/usr/bin/env python3
"""Env steps per second of a Python training loop on coral's vector env, against coral's own
C++ loop and against a pure-Python vector env, measured in one run.

  (a) python:  a Python loop calling `env.step(actions)` on `coral.make_vec("cartpole", N)`,
               random actions drawn per step with `rng.integers(0, 2, size=N)`;
  (b) bench:   `coral bench` on the same envs (sync topology, 1 thread, random policy): the
               same envs stepped with no Python in the loop;
  (c) pure:    the loop of (a) over `PurePythonVecEnv(N)` (pure_cartpole.py), N CartPoles with
               coral's dynamics stepped one by one in Python, on plain floats;
  (d) numpy:   the same with NumpyStateCartPole, whose state is a numpy array as in Gymnasium's
               CartPole-v1.

The three are measured alternately, round after round, so that drift of the machine's speed
touches all of them alike; each round's figures and ratios are printed, then the medians, then
one JSON line. (a)/(b) is the share of coral's native speed that survives the Python boundary;
(a)/(c) is the speedup over writing the env loop in Python.

`coral bench` runs a fixed number of steps, so a short pilot run sizes --steps to last about
--seconds; its figure is its own timing of the sampling loop (process start excluded).

Usage: PYTHONPATH=build/release/python bench/python/step_throughput.py [--num-envs 64]
       [--seconds 2] [--rounds 3] [--coral-bin build/release/apps/coral] [--measure python,bench,pure,numpy]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from pure_cartpole import NumpyStateCartPole, PurePythonVecEnv  # noqa: E402

KINDS = ("python", "bench", "pure", "numpy")
LABELS = {"python": "(a) Python loop on coral", "bench": "(b) coral bench", "pure": "(c) pure Python, floats",
          "numpy": "(d) pure Python, numpy"}


def action_source(draw: str, num_envs: int, rng):
    """A function giving the next step's random actions (one per env, 0 or 1):
    integers: rng.integers(0, 2, size=N) per step, numpy's idiom (about 5 us here on its own);
    uniform:  rng.random(N) < 0.5 per step, a bool array (about 1.3 us);
    table:    rows of a table of 1024 x N random actions drawn before the loop, cycled."""
    if draw == "integers":
        return lambda: rng.integers(0, 2, size=num_envs)
    if draw == "uniform":
        return lambda: rng.random(num_envs) < 0.5
    table = rng.integers(0, 2, size=(1024, num_envs))
    counter = iter(range(1 << 62))
    return lambda: table[next(counter) & 1023]


def python_loop_steps_per_second(env, num_envs: int, seconds: float, seed: int, draw: str = "integers") -> float:
    """Step `env` with random actions for about `seconds`; env steps per second."""
    rng = np.random.default_rng(seed)
    next_actions = action_source(draw, num_envs, rng)
    env.reset(seed=seed)
    steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    now = start
    while now < deadline:
        env.step(next_actions())
        steps += num_envs
        now = time.perf_counter()
    return steps / (now - start)


def coral_bench_command(coral_bin: str, num_envs: int, steps: int, seed: int) -> list[str]:
    # The settings make_vec("cartpole", N) picks: sync, one thread, one group of every env.
    return [coral_bin, "bench", "--env", "cartpole", "--topology", "sync", "--num-envs", str(num_envs),
            "--threads", "1", "--envs-per-group", str(num_envs), "--spin-us", "50", "--policy", "random", "--seed", str(seed), "--steps", str(steps),
            "--no-baseline", "--json"]


def coral_bench_steps_per_second(coral_bin: str, num_envs: int, steps: int, seed: int) -> float:
    """Run `coral bench` for `steps` env steps; the steps per second of its last JSON line."""
    command = coral_bench_command(coral_bin, num_envs, steps, seed)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"step_throughput: `{' '.join(command)}` failed with exit code {result.returncode}:\n"
                         f"{result.stderr.strip()}")
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    if not lines:
        raise SystemExit(f"step_throughput: `{' '.join(command)}` printed nothing")
    return float(json.loads(lines[-1])["steps_per_second"])


def import_coral():
    try:
        import coral  # noqa: PLC0415 - only (a) needs the extension
    except ImportError as error:
        raise SystemExit(
            f"step_throughput: (a) needs the coral Python module, and `import coral` failed: {error}\n"
            "Build the extension coral._coral (python/ in the CMake build) and run with "
            "PYTHONPATH=build/release/python, or leave (a) out with --measure bench,pure.")
    return coral


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=64, help="envs in each vector env (default 64)")
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per measurement (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of (a), (b), (c) (default 3)")
    parser.add_argument("--coral-bin", default=str(REPO / "build" / "release" / "apps" / "coral"),
                        help="the coral command (default: the repository's build/release/apps/coral)")
    parser.add_argument("--measure", default=",".join(KINDS),
                        help="comma-separated subset of python (a), bench (b), pure (c), numpy (d) (default all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the envs and the actions (default 0)")
    parser.add_argument("--actions", choices=("integers", "uniform", "table"), default="integers",
                        help="how the Python loops draw their random actions: rng.integers per step (default), "
                             "rng.random < 0.5 per step, or a table drawn before the loop")
    args = parser.parse_args(argv)
    args.measure = [kind.strip() for kind in args.measure.split(",") if kind.strip()]
    bad = [kind for kind in args.measure if kind not in KINDS]
    if bad or not args.measure:
        parser.error(f"--measure takes a comma-separated subset of {', '.join(KINDS)}, got {bad or 'nothing'}")
    if args.num_envs < 1:
        parser.error(f"--num-envs must be at least 1, got {args.num_envs}")
    if not args.seconds > 0:
        parser.error(f"--seconds must be positive, got {args.seconds}")
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    if "bench" in args.measure and not pathlib.Path(args.coral_bin).is_file():
        parser.error(f"--coral-bin {args.coral_bin} is not a file (build the coral target, or pass --coral-bin)")
    return args


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None:
        return None
    return numerator / denominator


def format_rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def format_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    n = args.num_envs
    measure = {}
    if "python" in args.measure:
        coral = import_coral()
        coral_env = coral.make_vec("cartpole", n)
        python_loop_steps_per_second(coral_env, n, min(0.2, args.seconds), args.seed)  # warm-up
        measure["python"] = lambda: python_loop_steps_per_second(coral_env, n, args.seconds, args.seed, args.actions)
    if "bench" in args.measure:
        pilot_steps = max(n, int(1_000_000 // n) * n)  # long enough that start-up costs stay small
        pilot = coral_bench_steps_per_second(args.coral_bin, n, pilot_steps, args.seed)
        bench_steps = max(n, int(pilot * args.seconds // n) * n)
        print(f"coral bench: pilot {format_rate(pilot)} steps/s, so --steps {bench_steps} "
              f"for about {args.seconds:g} s", flush=True)
        measure["bench"] = lambda: coral_bench_steps_per_second(args.coral_bin, n, bench_steps, args.seed)
    if "pure" in args.measure:
        pure_env = PurePythonVecEnv(n, seed=args.seed)
        python_loop_steps_per_second(pure_env, n, min(0.2, args.seconds), args.seed)  # warm-up
        measure["pure"] = lambda: python_loop_steps_per_second(pure_env, n, args.seconds, args.seed, args.actions)
    if "numpy" in args.measure:
        numpy_env = PurePythonVecEnv(n, seed=args.seed, env_class=NumpyStateCartPole)
        python_loop_steps_per_second(numpy_env, n, min(0.2, args.seconds), args.seed)  # warm-up
        measure["numpy"] = lambda: python_loop_steps_per_second(numpy_env, n, args.seconds, args.seed, args.actions)

    header = (f"{'round':>6} | " + " | ".join(f"{LABELS[k]:>24}" for k in KINDS)
              + f" | {'(a)/(b)':>8} | {'(a)/(c)':>8} | {'(a)/(d)':>8}")
    print(f"env steps per second, cartpole, {n} envs, {args.seconds:g} s per measurement, "
          f"random actions: {args.actions}")
    print(header)
    print("-" * len(header))
    rounds = []
    for r in range(args.rounds):
        row = {kind: (measure[kind]() if kind in measure else None) for kind in KINDS}
        row["python_over_bench"] = ratio(row["python"], row["bench"])
        row["python_over_pure"] = ratio(row["python"], row["pure"])
        row["python_over_numpy"] = ratio(row["python"], row["numpy"])
        rounds.append(row)
        print(f"{r + 1:>6} | " + " | ".join(f"{format_rate(row[k]):>24}" for k in KINDS)
              + f" | {format_ratio(row['python_over_bench']):>8} | {format_ratio(row['python_over_pure']):>8}"
              + f" | {format_ratio(row['python_over_numpy']):>8}", flush=True)

    def median(key: str) -> float | None:
        values = [row[key] for row in rounds if row[key] is not None]
        return statistics.median(values) if values else None

    summary = {key: median(key) for key in (*KINDS, "python_over_bench", "python_over_pure", "python_over_numpy")}
    print("-" * len(header))
    print(f"{'median':>6} | " + " | ".join(f"{format_rate(summary[k]):>24}" for k in KINDS)
          + f" | {format_ratio(summary['python_over_bench']):>8} | {format_ratio(summary['python_over_pure']):>8}"
          + f" | {format_ratio(summary['python_over_numpy']):>8}")
    print("(ratios: the median of each round's ratio, each taken from figures measured side by side)")
    print(json.dumps({
        "env": "cartpole", "num_envs": n, "seconds": args.seconds, "rounds": args.rounds, "actions": args.actions,
        "python_loop_steps_per_second": summary["python"],
        "coral_bench_steps_per_second": summary["bench"],
        "pure_python_steps_per_second": summary["pure"],
        "numpy_python_steps_per_second": summary["numpy"],
        "python_over_bench": summary["python_over_bench"],
        "python_over_pure": summary["python_over_pure"],
        "python_over_numpy": summary["python_over_numpy"],
        "per_round": rounds,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
