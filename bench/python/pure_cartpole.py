"""A pure-Python CartPole with exactly coral's dynamics (envs/src/cartpole.cpp), and a vector env
that loops over such envs in Python with the same protocol as `coral.make_vec`.

It is what a user's own Python env looks like: the per-env step is plain floats and `math`, no
numpy; only the vector env stacks the rows into numpy arrays. The throughput benchmark
(step_throughput.py) compares coral against it, and the PPO example can train on it
(`--vec pure`) without the C++ extension.

coral's spaces are loaded from python/coral/spaces.py by path, so this file needs numpy only.
"""
from __future__ import annotations

import importlib.util
import math
import pathlib
import random

import numpy as np


def _load_coral_spaces():
    path = pathlib.Path(__file__).resolve().parents[2] / "python" / "coral" / "spaces.py"
    spec = importlib.util.spec_from_file_location("coral_spaces", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


spaces = _load_coral_spaces()

GRAVITY = 9.8
MASS_CART = 1.0
MASS_POLE = 0.1
HALF_LENGTH = 0.5
FORCE_MAG = 10.0
TAU = 0.02
X_THRESHOLD = 2.4
THETA_THRESHOLD = 12 * 2 * math.pi / 360
TOTAL_MASS = MASS_CART + MASS_POLE
POLEMASS_LENGTH = MASS_POLE * HALF_LENGTH


def _advance(x, x_dot, theta, theta_dot, action):
    """One Euler step of the cart and pole: the next (x, x_dot, theta, theta_dot)."""
    force = FORCE_MAG if action == 1 else -FORCE_MAG
    cos_theta = math.cos(theta)
    sin_theta = math.sin(theta)
    temp = (force + POLEMASS_LENGTH * theta_dot * theta_dot * sin_theta) / TOTAL_MASS
    theta_acc = (GRAVITY * sin_theta - cos_theta * temp) / (
        HALF_LENGTH * (4.0 / 3.0 - MASS_POLE * cos_theta * cos_theta / TOTAL_MASS))
    x_acc = temp - POLEMASS_LENGTH * theta_acc * cos_theta / TOTAL_MASS
    return (x + TAU * x_dot, x_dot + TAU * x_acc, theta + TAU * theta_dot, theta_dot + TAU * theta_acc)


class CartPole:
    """Gymnasium-style CartPole: `reset(seed=None) -> (obs, info)`,
    `step(action) -> (obs, reward, terminated, truncated, info)`. An observation is a tuple of
    four Python floats (x, x_dot, theta, theta_dot); the episode is truncated after `max_steps`."""

    def __init__(self, seed: int | None = None, max_steps: int = 500):
        self.observation_space = spaces.Box(
            low=np.array([-2 * X_THRESHOLD, -np.inf, -2 * THETA_THRESHOLD, -np.inf]),
            high=np.array([2 * X_THRESHOLD, np.inf, 2 * THETA_THRESHOLD, np.inf]), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.max_steps = max_steps
        self._rng = random.Random(seed)
        self._state = (0.0, 0.0, 0.0, 0.0)
        self._steps = 0

    def reset(self, seed: int | None = None):
        if seed is not None:
            self._rng.seed(seed)
        uniform = self._rng.uniform
        self._state = (uniform(-0.05, 0.05), uniform(-0.05, 0.05), uniform(-0.05, 0.05), uniform(-0.05, 0.05))
        self._steps = 0
        return self._state, {}

    def step(self, action: int):
        self._state = _advance(*self._state, action)
        self._steps += 1
        x, _, theta, _ = self._state
        terminated = x < -X_THRESHOLD or x > X_THRESHOLD or theta < -THETA_THRESHOLD or theta > THETA_THRESHOLD
        truncated = self._steps >= self.max_steps
        return self._state, 1.0, terminated, truncated, {}


class NumpyStateCartPole(CartPole):
    """The same dynamics, keeping state the way Gymnasium's CartPole-v1 does: a numpy array drawn
    by a numpy Generator at reset, arithmetic on the numpy scalars unpacked from it, and a fresh
    float32 array returned by every step. The more common shape of a user's Python env, and a
    slower one than CartPole's plain floats."""

    def __init__(self, seed: int | None = None, max_steps: int = 500):
        super().__init__(seed, max_steps)
        self._np_rng = np.random.default_rng(seed)
        self._state = np.zeros(4)

    def reset(self, seed: int | None = None):
        if seed is not None:
            self._np_rng = np.random.default_rng(seed)
        self._state = self._np_rng.uniform(-0.05, 0.05, size=4)
        self._steps = 0
        return np.array(self._state, dtype=np.float32), {}

    def step(self, action: int):
        x, x_dot, theta, theta_dot = self._state  # numpy scalars, as in Gymnasium
        self._state = np.array(_advance(x, x_dot, theta, theta_dot, action))
        self._steps += 1
        x, theta = self._state[0], self._state[2]
        terminated = bool(x < -X_THRESHOLD or x > X_THRESHOLD or theta < -THETA_THRESHOLD or theta > THETA_THRESHOLD)
        truncated = self._steps >= self.max_steps
        return np.array(self._state, dtype=np.float32), 1.0, terminated, truncated, {}


class PurePythonVecEnv:
    """`n` CartPoles stepped one after another in a Python loop, with `coral.make_vec`'s protocol:
    `reset(seed=None) -> (obs, infos)`, `step(actions) -> (obs, rewards, terminations, truncations,
    infos)`, `infos["coral_episode"]` = {"r", "l"} with mask `infos["_coral_episode"]`.

    `autoreset_mode` is "next_step" (coral's default: the step after an episode ends resets that
    env, ignoring its action, with reward 0 and both flags False) or "same_step" (the env resets
    inside the step that ends it; `infos["final_obs"]`, masked by `infos["_final_obs"]`, holds the
    ended episode's last observation).

    Like coral's, the returned arrays are buffers that the next step/reset overwrites: copy what
    you keep.
    """

    def __init__(self, n: int, seed: int = 0, autoreset_mode: str = "next_step", max_steps: int = 500,
                 env_class=CartPole):
        if autoreset_mode not in ("next_step", "same_step"):
            raise ValueError(f"autoreset_mode must be 'next_step' or 'same_step', got {autoreset_mode!r}")
        self.num_envs = n
        self.envs = [env_class(seed + i, max_steps) for i in range(n)]
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        self.observation_space = spaces.batch_space(self.single_observation_space, n)
        self.action_space = spaces.batch_space(self.single_action_space, n)
        self.metadata = {"autoreset_mode": autoreset_mode}
        self._same_step = autoreset_mode == "same_step"
        self._obs = np.zeros((n, 4), dtype=np.float32)
        self._rewards = np.zeros(n, dtype=np.float32)
        self._terminations = np.zeros(n, dtype=np.bool_)
        self._truncations = np.zeros(n, dtype=np.bool_)
        self._final_obs = np.zeros((n, 4), dtype=np.float32)
        self._final_mask = np.zeros(n, dtype=np.bool_)
        self._episode_r = np.zeros(n, dtype=np.float32)
        self._episode_l = np.zeros(n, dtype=np.int32)
        self._episode_mask = np.zeros(n, dtype=np.bool_)
        self._returns = [0.0] * n
        self._lengths = [0] * n
        self._needs_reset = [False] * n

    def _infos(self) -> dict:
        infos = {"coral_episode": {"r": self._episode_r, "l": self._episode_l}, "_coral_episode": self._episode_mask}
        if self._same_step:
            infos["final_obs"] = self._final_obs
            infos["_final_obs"] = self._final_mask
        return infos

    def reset(self, seed: int | None = None):
        """Reset every env; an int `seed` seeds env i with seed + i."""
        rows = [env.reset(None if seed is None else seed + i)[0] for i, env in enumerate(self.envs)]
        self._obs[:] = rows
        self._returns = [0.0] * self.num_envs
        self._lengths = [0] * self.num_envs
        self._needs_reset = [False] * self.num_envs
        self._rewards[:] = 0.0
        self._terminations[:] = False
        self._truncations[:] = False
        self._episode_mask[:] = False
        self._final_mask[:] = False
        return self._obs, self._infos()

    def step(self, actions):
        actions = np.asarray(actions).tolist()
        rows, rewards, terms, truncs = [], [], [], []
        ended, final_rows = [], []
        returns, lengths, needs_reset = self._returns, self._lengths, self._needs_reset
        for i, env in enumerate(self.envs):
            if needs_reset[i]:
                obs, _ = env.reset()
                needs_reset[i] = False
                rows.append(obs)
                rewards.append(0.0)
                terms.append(False)
                truncs.append(False)
                continue
            obs, reward, terminated, truncated, _ = env.step(actions[i])
            returns[i] += reward
            lengths[i] += 1
            if terminated or truncated:
                ended.append((i, returns[i], lengths[i]))
                returns[i] = 0.0
                lengths[i] = 0
                if self._same_step:
                    final_rows.append(obs)
                    obs, _ = env.reset()
                else:
                    needs_reset[i] = True
            rows.append(obs)
            rewards.append(reward)
            terms.append(terminated)
            truncs.append(truncated)
        self._obs[:] = rows
        self._rewards[:] = rewards
        self._terminations[:] = terms
        self._truncations[:] = truncs
        self._episode_mask[:] = False
        self._final_mask[:] = False
        for k, (i, episode_return, length) in enumerate(ended):
            self._episode_mask[i] = True
            self._episode_r[i] = episode_return
            self._episode_l[i] = length
            if self._same_step:
                self._final_mask[i] = True
                self._final_obs[i] = final_rows[k]
        return self._obs, self._rewards, self._terminations, self._truncations, self._infos()

    def close(self) -> None:
        pass
