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

    ``policy(obs, action_mask=m)`` takes the env's action masks
    (``infos["action_mask"]``: one row of ``action_mask_size`` values per
    observation, nonzero = legal): a masked action is never returned.
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

    @property
    def action_mask_size(self):
        """Values in one row's action mask (0: the action space has no discrete part)."""
        return self._engine.action_mask_size

    def reset(self, row=None):
        """Row ``row``'s next observation starts an episode (every row's when None)."""
        if row is None:
            self._engine.reset_all()
        else:
            self._engine.reset(int(row))

    def __call__(self, observations, action_mask=None):
        obs = np.asarray(observations, dtype=np.float32)
        single = obs.ndim == 1
        width = self._engine.observation_size
        batch = obs.reshape(1, -1) if single else obs.reshape(obs.shape[0], -1)
        if batch.shape[1] != width:
            raise ValueError(f"load_policy: observations of {batch.shape[1]} floats given, the env's have {width}")
        masks = None
        if action_mask is not None:
            masks = np.asarray(action_mask)
            size = self._engine.action_mask_size
            if masks.shape != (batch.shape[0], size) and not (single and masks.shape == (size,)):
                expected = f"({size},)" if single else f"({batch.shape[0]}, {size})"
                raise ValueError(f"load_policy: action_mask of shape {masks.shape} given for "
                                 f"{'one observation' if single else f'{batch.shape[0]} observations'}, "
                                 f"expected {expected}")
            masks = np.ascontiguousarray(masks.reshape(batch.shape[0], size) != 0, dtype=np.uint8)
        if batch.shape[0] != self._engine.rows:
            self._engine = self._make(batch.shape[0])
        try:
            discrete, continuous = self._engine.act(np.ascontiguousarray(batch), masks)
        except RuntimeError as error:  # a mask row that rules out every value
            raise ValueError(f"load_policy: {error}") from None
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
