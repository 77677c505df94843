#!/usr/bin/env python3
"""Compare coral's MinAtar games with the original Python MinAtar under a
uniform random policy: mean return and mean episode length with standard
errors, a two-sample chi-square test on the return distribution and the
quantiles of the episode lengths on both sides.

Not part of the tests (CI cannot fetch MinAtar). Needs a python3 with numpy
(Debian: /usr/bin/python3 with python3-numpy),
a MinAtar checkout (https://github.com/kenjyoung/MinAtar) and coral's
`minatar_episodes` driver (cmake --build --preset release --target minatar_episodes).

    scripts/minatar_compare.py --minatar PATH [--episodes 10000] [--seed 1]
        [--games breakout,...] [--jobs 2] [--driver build/release/bench/envs/minatar_episodes]

Both sides use MinAtar's defaults: the full action set (6 actions, uniform),
sticky actions with probability 0.1, difficulty ramping on.
"""
import argparse
import json
import math
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

GAMES = ["asterix", "breakout", "freeway", "seaquest", "space_invaders"]


def run_original(minatar_path, game, episodes, seed):
    """Mean/s.e. of return and length, histogram of returns, sorted lengths, from the original."""
    sys.path.insert(0, minatar_path)
    import numpy as np
    from minatar import Environment  # noqa: the checkout's package

    env = Environment(game, sticky_action_prob=0.1, difficulty_ramping=True)
    env.seed(seed)
    choose = np.random.RandomState(seed + 1)
    returns, lengths = [], []
    for _ in range(episodes):
        env.reset()
        total, length, done = 0.0, 0, False
        while not done:
            reward, done = env.act(int(choose.randint(6)))
            total += reward
            length += 1
        returns.append(total)
        lengths.append(length)
    return summarise(game, returns, lengths)


def run_coral(driver, game, episodes, seed):
    out = subprocess.run([driver, f"minatar/{game}", str(episodes), str(seed)], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def summarise(game, returns, lengths):
    n = len(returns)

    def mean_se(v):
        m = sum(v) / n
        var = sum((x - m) ** 2 for x in v) / (n - 1)
        return m, math.sqrt(var / n)

    rm, rse = mean_se(returns)
    lm, lse = mean_se(lengths)
    hist = {}
    for r in returns:
        hist[str(int(round(r)))] = hist.get(str(int(round(r))), 0) + 1
    s = sorted(lengths)
    q = [s[int(p * (n - 1))] for p in (0.0, 0.25, 0.5, 0.75, 1.0)]
    return {"env": f"minatar/{game}", "episodes": n, "return_mean": rm, "return_se": rse, "length_mean": lm,
            "length_se": lse, "length_quantiles": q, "return_histogram": hist}


def chi_square(h1, h2):
    """Two-sample chi-square statistic and degrees of freedom over return bins (tail bins pooled to >= 10)."""
    keys = sorted({int(k) for k in h1} | {int(k) for k in h2})
    a = [h1.get(str(k), 0) for k in keys]
    b = [h2.get(str(k), 0) for k in keys]
    bins, ca, cb = [], 0, 0
    for x, y in zip(a, b):
        ca, cb = ca + x, cb + y
        if ca + cb >= 10:
            bins.append((ca, cb))
            ca, cb = 0, 0
    if ca + cb and bins:
        bins[-1] = (bins[-1][0] + ca, bins[-1][1] + cb)
    na, nb = sum(a), sum(b)
    stat = 0.0
    for x, y in bins:
        t = x + y
        ea, eb = t * na / (na + nb), t * nb / (na + nb)
        stat += (x - ea) ** 2 / ea + (y - eb) ** 2 / eb
    return stat, max(len(bins) - 1, 0)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minatar", required=True, help="path to a MinAtar checkout (the folder holding minatar/)")
    p.add_argument("--episodes", type=int, default=10000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--games", default=",".join(GAMES))
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--driver", default=os.path.join("build", "release", "bench", "envs", "minatar_episodes"))
    args = p.parse_args()
    games = args.games.split(",")
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        original = {g: pool.submit(run_original, os.path.abspath(args.minatar), g, args.episodes, args.seed) for g in games}
        ours = {g: run_coral(args.driver, g, args.episodes, args.seed) for g in games}
        original = {g: f.result() for g, f in original.items()}
    print("| game | coral return | MinAtar return | z | coral length | MinAtar length | z | returns chi² (df) |")
    print("|---|---|---|---|---|---|---|---|")
    for g in games:
        c, o = ours[g], original[g]

        def z(key):
            se = math.hypot(c[key + "_se"], o[key + "_se"])
            return (c[key + "_mean"] - o[key + "_mean"]) / se if se > 0 else 0.0

        stat, df = chi_square(c["return_histogram"], o["return_histogram"])
        print(f"| {g} | {c['return_mean']:.3f} ± {c['return_se']:.3f} | {o['return_mean']:.3f} ± {o['return_se']:.3f} "
              f"| {z('return'):+.2f} | {c['length_mean']:.1f} ± {c['length_se']:.1f} | {o['length_mean']:.1f} ± "
              f"{o['length_se']:.1f} | {z('length'):+.2f} | {stat:.1f} ({df}) |")
    print()
    for g in games:
        print(g, "length quantiles 0/25/50/75/100%: coral", ours[g]["length_quantiles"], "MinAtar",
              original[g]["length_quantiles"])
        print(g, "returns: coral", ours[g]["return_histogram"], "MinAtar", original[g]["return_histogram"])


if __name__ == "__main__":
    main()
