"""Tests of examples/python/ppo_cartpole.py that need no coral module: its advantage estimate
around episode ends, and its command-line contract (one JSON line, exit code 1 when unsolved)."""
import importlib.util
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

_PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "ppo_cartpole.py"
_spec = importlib.util.spec_from_file_location("ppo_cartpole", _PATH)
ppo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ppo)


def column(values):
    return np.array(values, dtype=np.float32).reshape(-1, 1)


def test_advantages_stop_at_an_episode_end_and_bootstrap_only_after_a_truncation():
    # One env, 3 steps, gamma = lambda = 1 so advantages are plain sums. Step 0 terminates:
    # its target is its reward alone. Step 2 is truncated: its target bootstraps from row 3.
    rewards = column([1.0, 0.0, 1.0])
    values = column([0.5, 9.0, 2.0, 4.0])
    ends = column([1.0, 0.0, 1.0])
    bootstrap = column([0.0, 1.0, 1.0])
    advantages = ppo.compute_advantages(rewards, values, ends, bootstrap, 1.0, 1.0)
    step2 = 1.0 + 4.0 - 2.0
    step1 = (0.0 + 2.0 - 9.0) + step2
    assert advantages[:, 0] == pytest.approx([1.0 - 0.5, step1, step2])


def test_advantages_discount_across_steps_within_an_episode():
    rewards = column([1.0, 1.0])
    values = column([0.0, 0.0, 10.0])
    ones = column([1.0, 1.0])
    advantages = ppo.compute_advantages(rewards, values, column([0.0, 0.0]), ones, 0.5, 0.5)
    last = 1.0 + 0.5 * 10.0
    assert advantages[:, 0] == pytest.approx([1.0 + 0.25 * last, last])


def test_the_actor_critic_gives_logits_and_values_per_row():
    agent = ppo.ActorCritic(4, 3, 16)
    logits, values = agent(torch.zeros(5, 4))
    assert logits.shape == (5, 3) and values.shape == (5,)
    actions, logprobs = ppo.sample_actions(logits)
    assert actions.shape == (5,) and torch.all(logprobs <= 0)


def test_an_unsolved_run_prints_one_json_line_and_exits_1():
    result = subprocess.run([sys.executable, str(_PATH), "--vec", "pure", "--total-steps", "2048", "--quiet"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    report = json.loads(lines[0])
    assert set(report) == {"solved", "env_steps", "wall_seconds", "mean_return", "episodes"}
    assert report["solved"] is False and report["env_steps"] == 2048
