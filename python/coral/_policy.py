"""coral.load_policy: a checkpoint's policy as a callable on numpy observations."""

import os

import numpy as np

from . import _coral


class Policy:
    """A trained policy (coral/learners/trained_policy.hpp from Python).

    ``policy(obs)`` takes one observation (shape ``(observation_size,)``) or a
    batch (shape ``(n, observation_size)``) and returns the actions: for one
    Discrete action space, an int (one observation) or an int32 array of shape
    ``(n,)``; for a MultiDiscrete or Box space, an array with one row per
    observation (int32 or float32); for a mix, a ``(discrete, continuous)``
    pair. Each batch row keeps its own stacked frames and recurrent state
    across calls; call ``reset(row)`` when that row's episode ends (its next
    observation starts one), or ``reset()`` for every row. A call with another
    batch size than the last starts every row afresh. Deterministic by default.
    """

    def __init__(self, path, deterministic=True, seed=None, env_args=None):
        self._path = os.fspath(path)
        self._deterministic = bool(deterministic)
        self._seed = seed
        self._env_args = [(str(k), str(v)) for k, v in (env_args or {}).items()]
        self._engine = self._make(1)

    def _make(self, rows):
        return _coral._Policy(self._path, rows, self._deterministic, self._seed, self._env_args)

    @property
    def observation_size(self):
        return self._engine.observation_size

    @property
    def env(self):
        return self._engine.env

    @property
    def algo(self):
        return self._engine.algo

    @property
    def file(self):
        return self._engine.file

    def reset(self, row=None):
        """Row ``row``'s next observation starts an episode (every row's when None)."""
        if row is None:
            self._engine.reset_all()
        else:
            self._engine.reset(int(row))

    def __call__(self, observations):
        obs = np.asarray(observations, dtype=np.float32)
        single = obs.ndim == 1
        width = self._engine.observation_size
        batch = obs.reshape(1, -1) if single else obs.reshape(obs.shape[0], -1)
        if batch.shape[1] != width:
            raise ValueError(f"load_policy: observations of {batch.shape[1]} floats given, the env's have {width}")
        if batch.shape[0] != self._engine.rows:
            self._engine = self._make(batch.shape[0])
        discrete, continuous = self._engine.act(np.ascontiguousarray(batch))
        if continuous.shape[1] == 0:
            actions = discrete[:, 0] if discrete.shape[1] == 1 else discrete
        elif discrete.shape[1] == 0:
            actions = continuous
        else:
            actions = (discrete[0], continuous[0]) if single else (discrete, continuous)
            return actions
        if single:
            return int(actions[0]) if actions.ndim == 1 else actions[0]
        return actions


def load_policy(path, deterministic=True, seed=None, env_args=None):
    """The policy of the checkpoint at ``path`` (a file, or a checkpoint
    directory: its newest checkpoint), as a callable on numpy observations.
    See :class:`Policy`. ``env_args`` (a dict) replaces the run's env args
    where the env is built for its spaces. Raises ValueError for a missing,
    truncated or foreign checkpoint or an env arg the env refuses."""
    return Policy(path, deterministic=deterministic, seed=seed, env_args=env_args)
