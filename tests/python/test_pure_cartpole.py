"""Tests of the pure-Python CartPole and vector env (bench/python/pure_cartpole.py) that the
benchmark and the PPO example use as the baseline: coral's dynamics and coral's vector protocol."""
import importlib.util
import math
import pathlib

import numpy as np
import pytest

_PATH = pathlib.Path(__file__).resolve().parents[2] / "bench" / "python" / "pure_cartpole.py"
_spec = importlib.util.spec_from_file_location("pure_cartpole", _PATH)
pure_cartpole = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pure_cartpole)


def test_one_step_follows_coral_euler_dynamics():
    env = pure_cartpole.CartPole(seed=0)
    (x, x_dot, theta, theta_dot), _ = env.reset()
    obs, reward, terminated, truncated, _ = env.step(1)
    total_mass = 1.1
    temp = (10.0 + 0.05 * theta_dot ** 2 * math.sin(theta)) / total_mass
    theta_acc = (9.8 * math.sin(theta) - math.cos(theta) * temp) / (
        0.5 * (4.0 / 3.0 - 0.1 * math.cos(theta) ** 2 / total_mass))
    x_acc = temp - 0.05 * theta_acc * math.cos(theta) / total_mass
    expected = (x + 0.02 * x_dot, x_dot + 0.02 * x_acc, theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc)
    assert obs == pytest.approx(expected, abs=1e-12)
    assert reward == 1.0 and not terminated and not truncated


def test_reset_draws_each_state_variable_within_five_hundredths():
    env = pure_cartpole.CartPole()
    for seed in range(50):
        obs, _ = env.reset(seed=seed)
        assert all(-0.05 <= v <= 0.05 for v in obs)
    assert env.reset(seed=3)[0] == env.reset(seed=3)[0]


def test_pushing_one_way_terminates_and_balancing_truncates_at_500():
    env = pure_cartpole.CartPole(seed=1)
    env.reset()
    steps = 0
    while True:
        _, _, terminated, truncated, _ = env.step(1)
        steps += 1
        if terminated or truncated:
            break
    assert terminated and not truncated and steps < 100
    env = pure_cartpole.CartPole(seed=1, max_steps=5)
    env.reset()
    assert [env.step(i % 2)[3] for i in range(5)] == [False] * 4 + [True]


def run_until_an_episode_ends(vec, actions):
    obs, rewards, terminations, truncations, infos = vec.step(actions)
    while not infos["_coral_episode"].any():
        obs, rewards, terminations, truncations, infos = vec.step(actions)
    return obs, rewards, terminations, truncations, infos


def test_next_step_mode_ends_then_resets_on_the_following_step():
    vec = pure_cartpole.PurePythonVecEnv(3, seed=0)
    assert vec.metadata["autoreset_mode"] == "next_step"
    obs, infos = vec.reset(seed=0)
    assert obs.shape == (3, 4) and obs.dtype == np.float32 and not infos["_coral_episode"].any()
    actions = np.ones(3, dtype=np.int64)
    obs, rewards, terminations, truncations, infos = run_until_an_episode_ends(vec, actions)
    ended = infos["_coral_episode"].copy()
    assert np.array_equal(ended, terminations | truncations)
    last = obs[ended]
    assert np.all((np.abs(last[:, 0]) > 2.4 - 1e-6) | (np.abs(last[:, 2]) > 12 * 2 * math.pi / 360 - 1e-6))
    lengths = infos["coral_episode"]["l"][ended].copy()
    assert np.array_equal(infos["coral_episode"]["r"][ended], lengths.astype(np.float32))
    obs, rewards, terminations, truncations, infos = vec.step(actions)
    assert np.all(rewards[ended] == 0.0)
    assert not terminations[ended].any() and not truncations[ended].any()
    assert np.all(np.abs(obs[ended]) <= 0.05)


def test_same_step_mode_resets_in_the_ending_step_and_reports_the_final_obs():
    vec = pure_cartpole.PurePythonVecEnv(3, seed=0, autoreset_mode="same_step")
    vec.reset()
    obs, rewards, terminations, truncations, infos = run_until_an_episode_ends(vec, np.zeros(3, dtype=np.int64))
    ended = infos["_coral_episode"]
    assert np.array_equal(infos["_final_obs"], ended) and np.array_equal(ended, terminations)
    assert np.all(rewards[ended] == 1.0)
    assert np.all(np.abs(obs[ended]) <= 0.05)
    final = infos["final_obs"][ended]
    assert np.all((np.abs(final[:, 0]) > 2.4 - 1e-6) | (np.abs(final[:, 2]) > 12 * 2 * math.pi / 360 - 1e-6))


def test_the_vector_spaces_are_batched_single_spaces():
    vec = pure_cartpole.PurePythonVecEnv(4)
    assert vec.single_observation_space.shape == (4,) and vec.single_action_space.n == 2
    assert vec.observation_space.shape == (4, 4)
    assert np.array_equal(vec.action_space.nvec, [2, 2, 2, 2])
    obs, _ = vec.reset(seed=1)
    assert vec.observation_space.contains(obs)
    with pytest.raises(ValueError):
        pure_cartpole.PurePythonVecEnv(2, autoreset_mode="never")
