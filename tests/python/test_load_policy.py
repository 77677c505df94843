"""coral.load_policy: a checkpoint's policy on numpy observations, as coral eval acts."""

import json
import subprocess

import numpy as np
import pytest

import coral


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    ckpt = tmp_path_factory.mktemp("policy") / "ckpt"
    coral.train(env="cartpole", algo="ppo", seed=3, total_steps=2048, keep_going=True, no_run_dir=True,
                verbose=False, checkpoint_dir=str(ckpt), hidden=[16], horizon=64, num_envs=4, topology="sync",
                executor="single")
    return ckpt


def play(policy, seed, episodes):
    """Episodes of cartpole stepped through coral.make_vec (sync, one env), the policy acting."""
    envs = coral.make_vec("cartpole", 1, topology="sync", autoreset_mode="same_step")
    obs, _ = envs.reset(seed=seed)
    returns, total = [], 0.0
    while len(returns) < episodes:
        action = policy(obs[0])
        obs, reward, terminated, truncated, _ = envs.step(np.array([action]))
        total += float(reward[0])
        if terminated[0] or truncated[0]:
            returns.append(total)
            total = 0.0
            policy.reset(0)
    envs.close()
    return returns


def test_a_loaded_policy_takes_one_observation_or_a_batch(checkpoint):
    policy = coral.load_policy(checkpoint)
    assert policy.env == "cartpole" and policy.algo == "ppo"
    assert policy.observation_size == 4
    one = policy(np.zeros(4, dtype=np.float32))
    assert isinstance(one, int) and one in (0, 1)
    batch = policy(np.zeros((3, 4), dtype=np.float64))
    assert batch.shape == (3,) and batch.dtype == np.int32
    # Deterministic: the same observation, the same action, row by row.
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    assert (policy(obs) == coral.load_policy(checkpoint)(obs)).all()
    assert [policy(o) for o in obs] == list(coral.load_policy(checkpoint)(obs))


def test_a_loaded_policy_refuses_what_is_not_a_checkpoint(tmp_path, checkpoint):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no checkpoint"):
        coral.load_policy(tmp_path / "empty")
    (tmp_path / "foreign.ckpt").write_bytes(b"not a checkpoint, but long enough to hold a header of one")
    with pytest.raises(ValueError, match="is not a coral checkpoint"):
        coral.load_policy(tmp_path / "foreign.ckpt")
    with pytest.raises(ValueError, match="unknown config key 'gravity'"):
        coral.load_policy(checkpoint, env_args={"gravity": "1"})
    with pytest.raises(ValueError, match="observations of 3 floats given"):
        coral.load_policy(checkpoint)(np.zeros(3))


def coral_binary():
    """The build tree's `coral` beside this package (build/<preset>/apps/coral), if there."""
    import os
    path = os.path.join(os.path.dirname(coral.__file__), "..", "..", "apps", "coral")
    return path if os.access(path, os.X_OK) else None


@pytest.mark.skipif(coral_binary() is None, reason="not the build tree: no apps/coral beside the package")
def test_a_loaded_policy_gets_the_returns_coral_eval_gets_for_a_seed(checkpoint):
    out = subprocess.run([coral_binary(), "eval", "--checkpoint", str(checkpoint), "--episodes", "4",
                          "--deterministic", "--seed", "7"], check=True, capture_output=True, text=True).stdout
    summary = json.loads(out.strip().splitlines()[-1])
    eval_returns = [float(line.split()[3]) for line in out.splitlines() if line.startswith("episode ")]
    assert summary["episodes"] == 4 and summary["deterministic"] is True
    assert play(coral.load_policy(checkpoint), seed=7, episodes=4) == eval_returns


@pytest.fixture(scope="module")
def masked_checkpoint(tmp_path_factory):
    ckpt = tmp_path_factory.mktemp("masked") / "ckpt"
    coral.train(env="tictactoe", env_arg={"opponent": "random"}, algo="ppo", seed=5, total_steps=1024,
                keep_going=True, no_run_dir=True, verbose=False, checkpoint_dir=str(ckpt), hidden=[16],
                horizon=32, num_envs=4, topology="sync", executor="single")
    return ckpt


def test_a_loaded_policy_never_returns_an_action_its_mask_rules_out(masked_checkpoint):
    policy = coral.load_policy(masked_checkpoint)
    assert policy.action_mask_size == 9
    rng = np.random.default_rng(1)
    obs = rng.uniform(-1, 1, size=(256, 9)).astype(np.float32)
    masks = (rng.uniform(size=(256, 9)) < 0.3).astype(np.int8)
    masks[np.arange(256), rng.integers(0, 9, size=256)] = 1  # at least one legal move per row
    actions = policy(obs, action_mask=masks)
    assert masks[np.arange(256), actions].all()
    # One legal move: the policy takes it, row by row and for one observation.
    only = rng.integers(0, 9, size=256)
    assert (policy(obs, action_mask=np.eye(9, dtype=bool)[only]) == only).all()
    assert policy(obs[0], action_mask=np.eye(9)[4]) == 4
    # Through the env: every action of a played game is legal.
    envs = coral.make_vec("tictactoe", 8, opponent="random", topology="sync")
    obs, infos = envs.reset(seed=3)
    for _ in range(40):
        obs, _, _, _, infos = envs.step(policy(obs, action_mask=infos["action_mask"]))
    envs.close()


def test_a_loaded_policy_refuses_a_mask_of_another_shape_or_with_no_legal_action(masked_checkpoint):
    policy = coral.load_policy(masked_checkpoint)
    obs = np.zeros((2, 9), dtype=np.float32)
    with pytest.raises(ValueError, match=r"action_mask of shape \(2, 8\) given for 2 observations, expected \(2, 9\)"):
        policy(obs, action_mask=np.ones((2, 8)))
    with pytest.raises(ValueError, match=r"action_mask of shape \(2, 9\) given for one observation, expected \(9,\)"):
        policy(obs[0], action_mask=np.ones((2, 9)))
    masks = np.ones((2, 9))
    masks[1] = 0
    with pytest.raises(ValueError, match="the action mask of row 1 rules out every value of action component 0"):
        policy(obs, action_mask=masks)
