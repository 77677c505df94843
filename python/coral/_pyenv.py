"""coral.register: a Gymnasium-style Python env class run inside coral."""

import contextlib
import numbers
import threading
import types

import numpy as np

from . import _coral
from . import _spaces


class _Adapter:
    """What coral's C++ side calls (under the GIL): flat rows in and out."""

    __slots__ = ("env", "seed", "obs", "act", "info", "final_info")

    def __init__(self, env, seed, obs_layout, act_layout):
        self.env = env
        self.seed = seed
        self.obs = obs_layout
        self.act = act_layout
        # The env's info of its last reset or step, and on a reset the one it
        # replaced (a same-step reset's final_info); the vector env reads them
        # for the envs of the batch it holds, while those envs wait.
        self.info = {}
        self.final_info = {}

    def reset(self):
        if self.seed is not None:
            result = self.env.reset(seed=self.seed)
            self.seed = None  # later episodes go on from the env's own generator, as in Gymnasium
        else:
            result = self.env.reset()
        obs, info = result if isinstance(result, tuple) and len(result) == 2 else (result, {})
        self.final_info, self.info = self.info, info
        return self.obs.flatten_one(obs)

    def step(self, discrete, continuous):
        obs, reward, terminated, truncated, info = self.env.step(self.act.unflatten_one(discrete, continuous))
        self.info = info
        return self.obs.flatten_one(obs), float(reward), bool(terminated), bool(truncated)


_made = threading.local()


@contextlib.contextmanager
def first_spaces(seeded=True):
    """Within the block: `seen.spaces` becomes (observation space, action space,
    their descriptions) of the first Python env made on this thread (None if
    none is), and `seen.adapters` maps each env index to the adapter last made
    for it. coral's C++ spaces hold neither dtypes nor starts; a vector env
    over a Python env takes the env's own spaces from here, as Gymnasium's
    vector envs take their first env's, and its envs' infos from the adapters.
    The envs made in the block are a vector env's: env i's first reset gets
    seed + i, as Gymnasium's vector envs seed theirs, or (seeded=False) no
    seed at all."""
    seen = types.SimpleNamespace(spaces=None, adapters={}, seeded=seeded)
    previous = getattr(_made, "seen", None)
    _made.seen = seen
    try:
        yield seen
    finally:
        _made.seen = previous


def _key(name, value):
    if isinstance(value, bool):
        return (name, "bool", "true" if value else "false", f"{name} (default {value})")
    if isinstance(value, numbers.Integral):
        return (name, "int", str(int(value)), f"{name} (default {value})")
    if isinstance(value, numbers.Real):
        return (name, "float", repr(float(value)), f"{name} (default {value})")
    raise ValueError(f"register: {name}={value!r} is invalid: a default must be an int, float or bool "
                     "(the env settings coral passes on)")


def register(name, env_class, **defaults):
    """Registers `env_class` (a Gymnasium-style env: reset(seed=...) -> (obs, info),
    step(action) -> (obs, reward, terminated, truncated, info), observation_space,
    action_space) as coral env `name`. Its constructor gets **defaults, overridden
    by the env settings of make_vec(**env_args) or train(env_arg=...). Each env
    gets a seed drawn from (run seed, env index) on its first reset (in a
    vector env, run seed + env index, as Gymnasium's vector envs seed theirs)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"register: name {name!r} is invalid: must be a non-empty string")
    if not callable(env_class):
        raise ValueError(f"register: {env_class!r} is not a class or callable")
    keys = [_key(k, v) for k, v in defaults.items()]

    def make_adapter(seed, env_index, kwargs):
        env = env_class(**kwargs)
        obs_desc = _spaces.to_desc(env.observation_space)
        act_desc = _spaces.to_desc(env.action_space)
        seen = getattr(_made, "seen", None)
        if seen is None:  # coral.train: unrelated streams for distinct (seed, index) pairs
            env_seed = int(np.random.SeedSequence([int(seed), int(env_index)]).generate_state(1)[0])
        else:
            env_seed = int(seed) + int(env_index) if seen.seeded else None
        adapter = _Adapter(env, env_seed, _spaces.ObservationLayout(obs_desc), _spaces.ActionLayout(act_desc))
        if seen is not None:
            if seen.spaces is None:
                seen.spaces = (env.observation_space, env.action_space, obs_desc, act_desc)
            seen.adapters[int(env_index)] = adapter
        return adapter, obs_desc, act_desc

    doc = (getattr(env_class, "__doc__", None) or "").strip().splitlines()
    description = doc[0] if doc else f"Python env {getattr(env_class, '__qualname__', env_class)!s}"
    try:
        _coral.register_env(name, description, keys, make_adapter)
    except RuntimeError as e:
        raise ValueError(str(e)) from None
