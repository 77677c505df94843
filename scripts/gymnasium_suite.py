#!/usr/bin/env python3
"""Runs Gymnasium's own vector tests with coral as the vector env.

Usage: PYTHONPATH=build/release/python:<gymnasium checkout> \\
         /usr/bin/python3 scripts/gymnasium_suite.py <gymnasium checkout> [pytest arguments]
Default tests: tests/vector/test_vector_env.py, tests/vector/test_autoreset_mode.py
and tests/wrappers/vector/.

Gymnasium is not a Debian package, so this is a check run by hand against a
checkout of its source, not part of CI. Every SyncVectorEnv and
AsyncVectorEnv the tests build (directly or through gymnasium.make_vec) is
coral.make_vec over the same env functions, registered with coral.register,
with seed=None (Gymnasium's unseeded start), stats_key=None and
coral_infos=False (infos as Gymnasium builds them): a test passes when coral
behaves as Gymnasium's own vector envs do.

Failures left (Gymnasium 1.4.0), each a documented difference (docs/python.md)
or a package Debian does not ship here:
- a space coral does not take (Text, Graph, Sequence, OneOf): make_vec's
  ValueError (test_vector_env.py test_vector_obs_action_spaces,
  test_autoreset_mode.py test_same_step_final_obs);
- test_vector_env.py test_final_obs_info: it steps Discrete(4) with action 4;
  coral checks actions against the action space and raises ValueError;
- rendering: coral's vector env renders nothing (render_mode is None), so
  RecordVideo refuses it (and moviepy is not installed either);
- envs needing Box2D (CarRacing), pygame (human rendering) or MuJoCo (Ant).
"""

import itertools
import os
import sys


def _coral_vector_env(env_fns, copy=True, observation_mode=None, autoreset_mode=None, **_ignored):
    """A coral vector env over `env_fns`, in place of SyncVectorEnv/AsyncVectorEnv."""
    import coral

    env_fns = list(env_fns)
    made = itertools.count(-1)

    def make(**_kwargs):
        # The first env coral makes only probes the spaces (env_fns[0] again); the others are
        # envs 0, 1, ... (and again from 0 when a seeded reset builds them anew).
        return env_fns[max(next(made), 0) % len(env_fns)]()

    name = f"gymnasium-suite-{next(_names)}"
    coral.register(name, make)
    kwargs = {} if autoreset_mode is None else {"autoreset_mode": autoreset_mode}
    return coral.make_vec(name, len(env_fns), copy=copy, seed=None, stats_key=None, coral_infos=False, **kwargs)


_names = itertools.count()


class _Plugin:
    """Puts coral in place of Gymnasium's vector envs before the tests import them."""

    @staticmethod
    def pytest_configure(config):
        import gymnasium.vector

        for module in (gymnasium.vector, sys.modules["gymnasium.vector.sync_vector_env"],
                       sys.modules["gymnasium.vector.async_vector_env"]):
            for name in ("SyncVectorEnv", "AsyncVectorEnv"):
                if hasattr(module, name):
                    setattr(module, name, _coral_vector_env)


def main(argv):
    import pytest

    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1])
    args = argv[2:] or ["tests/vector/test_vector_env.py", "tests/vector/test_autoreset_mode.py",
                        "tests/wrappers/vector"]
    os.chdir(root)
    sys.path.insert(0, root)
    return pytest.main(["-p", "no:cacheprovider", "-q", *args], plugins=[_Plugin()])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
