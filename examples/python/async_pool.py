#!/usr/bin/env python3
"""Pool sampling from Python, EnvPool-style: async_reset, then recv/send.

coral steps 16 `delay` envs (each step busy-waits ~200 us, like a heavy
simulator) on 2 threads; recv() returns whichever 4 envs finished first,
and the policy answers them while the others keep stepping. Prints the
throughput against the ideal of 2 threads doing nothing but env steps.

    PYTHONPATH=build/release/python /usr/bin/python3 examples/python/async_pool.py
"""

import argparse
import json
import time

import numpy as np

import coral


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--step-us", type=float, default=200.0)
    p.add_argument("--seconds", type=float, default=2.0)
    a = p.parse_args()

    rng = np.random.default_rng(0)
    steps = 0
    seen = np.zeros(a.num_envs, dtype=np.int64)
    with coral.make_vec("delay", a.num_envs, batch_size=a.batch_size, num_threads=a.threads,
                        mean_us=a.step_us) as envs:
        envs.async_reset()
        start = time.perf_counter()
        while time.perf_counter() - start < a.seconds:
            obs, rewards, terminations, truncations, infos = envs.recv()
            ids = infos["env_id"]  # which envs this batch holds
            seen[ids] += 1
            actions = rng.integers(0, 2, size=len(ids))
            envs.send(actions, ids)
            steps += len(ids)
        elapsed = time.perf_counter() - start
    ideal = a.threads * 1e6 / a.step_us
    result = {"steps_per_second": steps / elapsed, "ideal": ideal, "efficiency": steps / elapsed / ideal,
              "every_env_stepped": bool((seen > 0).all())}
    print(json.dumps(result))
    return 0 if result["every_env_stepped"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
