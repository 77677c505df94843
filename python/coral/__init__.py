"""coral from Python: its envs as a Gymnasium-style vector env, and its trainer.

    import coral
    envs = coral.make_vec("cartpole", 8)          # a gymnasium.vector.VectorEnv when gymnasium is installed
    obs, infos = envs.reset(seed=0)
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
    result = coral.train(env="cartpole", algo="ppo")   # `coral train`, in-process
    policy = coral.load_policy("runs/cartpole/checkpoints")  # a trained policy: actions = policy(obs)

See docs/python.md.
"""

import sys as _sys

try:
    import numpy as _numpy  # noqa: F401  (coral's one dependency: a clear error here, not deep inside)
except ImportError as _missing:
    raise ImportError(f"coral needs numpy, which {_sys.executable} (Python {_sys.version.split()[0]}) cannot "
                      f"import ({_missing}): install it into this environment (pip install numpy), or make the "
                      "venv with --system-site-packages to use Debian's python3-numpy") from None

from . import _coral, spaces
from ._errors import EnvError
from ._pyenv import register
from ._gym import USING_GYMNASIUM, AutoresetMode
from ._train import TrainingInterrupted, train
from ._vector import VectorEnv, make_vec
from ._policy import Policy, load_policy

__version__ = "0.1.0"


def env_names():
    """The names of every registered env (built-in and coral.register'ed)."""
    return list(_coral.env_names())


__all__ = ["make_vec", "VectorEnv", "register", "train", "env_names", "EnvError", "TrainingInterrupted",
           "USING_GYMNASIUM", "AutoresetMode", "load_policy", "Policy"]
