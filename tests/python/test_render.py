"""render(): frames of coral's envs through coral.make_vec, as Gymnasium's vector envs give them."""

import numpy as np
import pytest

import coral


def test_a_cpp_env_renders_one_frame_per_env_as_it_stands():
    with coral.make_vec("cartpole", 3, seed=4, render_mode="rgb_array") as env:
        assert env.render_mode == "rgb_array"
        assert env.metadata["render_modes"] == ["rgb_array"] and env.metadata["render_fps"] == 30
        obs, _ = env.reset(seed=4)
        frames = env.render()
        assert isinstance(frames, tuple) and len(frames) == 3
        for frame in frames:
            assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.shape == (400, 600, 3)
        # Each env's own state: the carts start at different x.
        assert not np.array_equal(frames[0], frames[1])
        again = env.render()
        assert all(np.array_equal(a, b) for a, b in zip(frames, again))
        assert again[0] is not frames[0]  # new arrays: a recorder may keep them
        for _ in range(5):
            env.step(np.ones(3, dtype=np.int64))
        moved = env.render()
        assert not np.array_equal(moved[0], frames[0])


def test_minatar_frames_are_160_pixels_square():
    with coral.make_vec("minatar/breakout", 2, render_mode="rgb_array") as env:
        env.reset(seed=0)
        frames = env.render()
        assert [f.shape for f in frames] == [(160, 160, 3)] * 2


def test_without_render_mode_render_gives_none_and_an_env_that_cannot_render_is_refused():
    with coral.make_vec("cartpole", 2) as env:
        env.reset(seed=0)
        assert env.render_mode is None and env.render() is None
        assert env.metadata["render_modes"] == ["rgb_array"]
    with pytest.raises(ValueError, match=r"^render_mode: 'bandit' does not render \(docs/envs.md lists the envs "
                                         r"that do\)$"):
        coral.make_vec("bandit", 2, render_mode="rgb_array")
    with pytest.raises(ValueError, match=r"^render_mode: 'human' is invalid \(allowed: None, 'rgb_array'\)$"):
        coral.make_vec("cartpole", 2, render_mode="human")


def test_render_needs_the_envs_in_hand():
    env = coral.make_vec("cartpole", 2, render_mode="rgb_array")
    with pytest.raises(RuntimeError, match="reset"):
        env.render()
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.render()
    with coral.make_vec("cartpole", 4, batch_size=2, render_mode="rgb_array") as pool:
        pool.async_reset()
        pool.recv()
        with pytest.raises(RuntimeError, match="pool"):
            pool.render()


class Painted:
    """A Python env whose frames say its step count."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 12}

    def __init__(self):
        self.observation_space = coral._gym.spaces.Box(-1, 1, (1,), np.float32)
        self.action_space = coral._gym.spaces.Discrete(2)
        self.render_mode = "rgb_array"
        self.t = 0

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(1, dtype=np.float32), 0.0, False, False, {}

    def render(self):
        return np.full((2, 3, 3), self.t, dtype=np.uint8)


coral.register("painted", Painted)


def test_a_python_env_renders_as_its_instances_do():
    with coral.make_vec("painted", 2) as env:
        assert env.render_mode == "rgb_array" and env.metadata["render_fps"] == 12
        env.reset(seed=0)
        env.step(np.zeros(2, dtype=np.int64))
        frames = env.render()
        assert len(frames) == 2 and all((f == 1).all() for f in frames)
    with pytest.raises(ValueError, match="renders as its instances do"):
        coral.make_vec("painted", 2, render_mode="human")
