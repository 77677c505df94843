#!/usr/bin/env python3
"""What a step of coral.make_vec costs beyond the policy, when the policy takes a while.

8 cartpoles; before each step a busy-wait of --policy-us stands in for a policy's
forward pass. Prints, per spin_us, the time per step minus the policy's time: the
hand-off between the Python thread and coral's sampling thread, and the envs' step.

Usage: PYTHONPATH=build/release/python /usr/bin/python3 bench/python/handoff_latency.py
"""
import argparse
import json
import time

import numpy as np

import coral


def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy-us", type=float, default=200.0)
    p.add_argument("--steps", type=int, default=5000)
    p.add_argument("--spin-us", type=int, nargs="+", default=[50, 500, 2000])
    a = p.parse_args()
    results = {}
    for spin in a.spin_us:
        with coral.make_vec("cartpole", 8, seed=0, spin_us=spin) as env:
            env.reset()
            actions = np.zeros(8, dtype=np.int64)
            start = time.perf_counter()
            for _ in range(a.steps):
                busy(a.policy_us * 1e-6)
                env.step(actions)
            beyond = 1e6 * (time.perf_counter() - start) / a.steps - a.policy_us
        results[spin] = beyond
        print(f"spin_us {spin}: {beyond:.1f} us per step beyond the {a.policy_us:g} us policy")
    print(json.dumps({"policy_us": a.policy_us, "beyond_us_by_spin": results}))


if __name__ == "__main__":
    main()
