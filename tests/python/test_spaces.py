"""Tests of coral's own spaces (python/coral/spaces.py), loaded by path so that they run
without the C++ extension that `coral/__init__.py` imports."""
import importlib.util
import pathlib

import numpy as np
import pytest

_SPACES_PATH = pathlib.Path(__file__).resolve().parents[2] / "python" / "coral" / "spaces.py"
_spec = importlib.util.spec_from_file_location("coral_spaces", _SPACES_PATH)
spaces = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(spaces)

Box, Discrete, MultiDiscrete, Dict, Tuple, batch_space = (
    spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.Dict, spaces.Tuple, spaces.batch_space)

INF = np.inf


def cartpole_observation_space():
    return Box(low=np.array([-4.8, -INF, -0.4189, -INF]), high=np.array([4.8, INF, 0.4189, INF]), dtype=np.float32)


def nested_space():
    return Dict({
        "position": Box(-1.0, 1.0, shape=(2,)),
        "inner": Tuple([Discrete(3, start=-1), MultiDiscrete([[2, 3], [4, 5]]),
                        Dict({"speed": Box(0.0, INF, shape=(3,), dtype=np.float64)})]),
        "color": Discrete(5),
    })


def every_space():
    return {
        "bounded box": Box(-2.0, 3.0, shape=(3, 2)),
        "unbounded box": Box(-INF, INF, shape=(5,)),
        "box bounded below": Box(np.array([0.0, -1.0]), np.array([INF, INF])),
        "box bounded above": Box(-INF, np.array([0.0, -7.5])),
        "mixed box": cartpole_observation_space(),
        "float64 box": Box(-1.0, 1.0, shape=(2,), dtype=np.float64),
        "int box": Box(-3, 4, shape=(4,), dtype=np.int32),
        "unbounded int box": Box(-INF, INF, shape=(2,), dtype=np.int64),
        "bool box": Box(0, 1, shape=(3,), dtype=np.bool_),
        "scalar box": Box(0.0, 1.0, shape=()),
        "discrete": Discrete(4),
        "discrete with start": Discrete(3, start=-2),
        "multi-discrete": MultiDiscrete([2, 3, 4]),
        "2-d multi-discrete": MultiDiscrete(np.array([[2, 3], [4, 1]])),
        "tuple": Tuple([Discrete(2), Box(-1.0, 1.0, shape=(2,))]),
        "nested dict": nested_space(),
    }


def assert_same_sample(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_same_sample(a[key], b[key])
    elif isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same_sample(x, y)
    else:
        assert np.array_equal(np.asarray(a), np.asarray(b))


def flatten_sample(sample):
    if isinstance(sample, dict):
        return np.concatenate([flatten_sample(v) for v in sample.values()])
    if isinstance(sample, tuple):
        return np.concatenate([flatten_sample(v) for v in sample])
    return np.asarray(sample, dtype=np.float64).ravel()


@pytest.mark.parametrize("name", list(every_space()))
def test_every_sample_is_contained(name):
    space = every_space()[name]
    space.seed(0)
    for _ in range(200):
        sample = space.sample()
        assert space.contains(sample), (name, sample)
        assert sample in space


@pytest.mark.parametrize("name", list(every_space()))
def test_the_same_seed_gives_the_same_samples_and_another_seed_others(name):
    first, second, third = every_space()[name], every_space()[name], every_space()[name]
    first.seed(123)
    second.seed(123)
    third.seed(124)
    a = [first.sample() for _ in range(20)]
    b = [second.sample() for _ in range(20)]
    c = [third.sample() for _ in range(20)]
    for x, y in zip(a, b):
        assert_same_sample(x, y)
    assert not np.array_equal(np.stack([flatten_sample(x) for x in a]), np.stack([flatten_sample(x) for x in c]))


def test_seed_in_the_constructor_equals_a_later_seed_call():
    a = Box(-1.0, 1.0, shape=(3,), seed=7)
    b = Box(-1.0, 1.0, shape=(3,))
    b.seed(7)
    assert np.array_equal(a.sample(), b.sample())
    assert Discrete(10, seed=3).sample() == Discrete(10, seed=3).sample()


def test_seed_returns_the_seed_used():
    assert Discrete(2).seed(42) == 42
    assert isinstance(Box(0.0, 1.0, shape=(1,)).seed(), int)
    seeds = nested_space().seed(5)
    assert list(seeds) == ["position", "inner", "color"]
    assert isinstance(seeds["inner"], tuple) and len(seeds["inner"]) == 3


def test_a_dict_seeded_by_key_seeds_each_subspace_with_its_own_seed():
    space = Dict({"a": Discrete(1000), "b": Box(-1.0, 1.0, shape=(2,))})
    space.seed({"a": 1, "b": 2})
    alone_a, alone_b = Discrete(1000, seed=1), Box(-1.0, 1.0, shape=(2,), seed=2)
    sample = space.sample()
    assert sample["a"] == alone_a.sample()
    assert np.array_equal(sample["b"], alone_b.sample())
    with pytest.raises(ValueError):
        space.seed({"a": 1})


def test_a_negative_seed_is_rejected():
    with pytest.raises(ValueError):
        Discrete(2).seed(-1)


def test_unbounded_box_dimensions_sample_normal_and_exponential():
    rng_box = Box(np.array([-INF, 2.0, -INF]), np.array([INF, INF, -3.0]), dtype=np.float64, seed=0)
    samples = np.stack([rng_box.sample() for _ in range(20000)])
    normal, from_below, from_above = samples[:, 0], samples[:, 1] - 2.0, -3.0 - samples[:, 2]
    assert abs(normal.mean()) < 0.05 and abs(normal.std() - 1.0) < 0.05
    assert normal.min() < 0 < normal.max()
    # Exp(1): mean 1, variance 1, never negative.
    for offset in (from_below, from_above):
        assert offset.min() >= 0
        assert abs(offset.mean() - 1.0) < 0.05 and abs(offset.std() - 1.0) < 0.05


def test_bounded_box_samples_spread_over_the_whole_interval():
    samples = np.stack([Box(-2.0, 3.0, shape=(1,), seed=s).sample() for s in range(2000)])
    assert samples.min() < -1.9 and samples.max() > 2.9


def test_box_attributes():
    space = cartpole_observation_space()
    assert space.shape == (4,)
    assert space.dtype == np.float32
    assert space.low.dtype == np.float32 and space.high.dtype == np.float32
    assert np.array_equal(space.bounded_below, [True, False, True, False])
    assert not space.is_bounded() and Box(0.0, 1.0, shape=(2,)).is_bounded()
    scalar_bounds = Box(-1.0, 2.0, shape=(2, 3))
    assert scalar_bounds.low.shape == (2, 3) and np.all(scalar_bounds.high == 2.0)
    assert Box(np.zeros(3), np.ones(3)).shape == (3,)


def test_box_rejects_bad_arguments():
    with pytest.raises(ValueError):
        Box(1.0, 0.0, shape=(2,))  # low > high
    with pytest.raises(ValueError):
        Box(np.zeros(3), np.ones(2))  # shapes differ
    with pytest.raises(ValueError):
        Box(0.0, 1.0)  # no shape
    with pytest.raises(ValueError):
        Box(0.0, 1.0, shape=(2,), dtype=np.complex64)
    with pytest.raises(ValueError):
        Box(np.nan, 1.0, shape=(2,))


def test_integer_box_turns_infinite_bounds_into_the_dtype_limits():
    space = Box(-INF, INF, shape=(2,), dtype=np.int32)
    assert space.low[0] == np.iinfo(np.int32).min and space.high[0] == np.iinfo(np.int32).max
    assert space.is_bounded()


def test_box_contains_rejects_wrong_shape_dtype_and_out_of_range():
    space = Box(-1.0, 1.0, shape=(2,))
    assert space.contains(np.array([0.5, -0.5], dtype=np.float32))
    assert space.contains([0.5, -0.5])  # a list is converted, as Gymnasium does
    assert space.contains(np.array([1, 0], dtype=np.int8))  # int8 casts safely to float32
    assert not space.contains(np.array([0.5, -0.5, 0.0], dtype=np.float32))
    assert not space.contains(np.array([[0.5, -0.5]], dtype=np.float32))
    assert not space.contains(np.array([0.5, -0.5], dtype=np.float64))  # float64 does not cast safely
    assert not space.contains(np.array([1.5, 0.0], dtype=np.float32))
    assert not space.contains(np.array([np.nan, 0.0], dtype=np.float32))
    assert not space.contains("ab")
    int_space = Box(0, 3, shape=(2,), dtype=np.int64)
    assert int_space.contains(np.array([0, 3]))
    assert not int_space.contains(np.array([0.0, 3.0]))
    assert not int_space.contains(np.array([0, 4]))


def test_discrete_contains_integer_scalars_in_range_only():
    space = Discrete(3)
    assert space.shape == () and space.dtype == np.int64 and space.n == 3 and space.start == 0
    for good in (0, 2, np.int64(1), np.int32(2), np.array(1), np.uint8(0)):
        assert space.contains(good), good
    for bad in (3, -1, 1.0, np.float32(1), np.array([1]), "1", None, np.array(1.0)):
        assert not space.contains(bad), bad
    shifted = Discrete(3, start=-1)
    assert shifted.contains(-1) and shifted.contains(1) and not shifted.contains(2)


def test_discrete_sample_is_an_int64_and_covers_every_value():
    space = Discrete(4, seed=0)
    samples = [space.sample() for _ in range(400)]
    assert all(isinstance(s, np.int64) for s in samples)
    assert set(int(s) for s in samples) == {0, 1, 2, 3}


def test_discrete_sample_with_a_mask_draws_only_allowed_values():
    space = Discrete(4, seed=0)
    mask = np.array([0, 1, 0, 1], dtype=np.int8)
    assert set(int(space.sample(mask)) for _ in range(100)) == {1, 3}
    assert space.sample(np.zeros(4, dtype=np.int8)) == 0


def test_discrete_rejects_bad_arguments():
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError):
            Discrete(bad)


def test_multi_discrete_contains():
    space = MultiDiscrete([2, 3])
    assert space.shape == (2,) and space.dtype == np.int64
    assert np.array_equal(space.nvec, [2, 3])
    assert space.contains(np.array([1, 2]))
    assert space.contains([0, 0])
    assert not space.contains(np.array([2, 0]))  # 2 >= nvec[0]
    assert not space.contains(np.array([-1, 0]))
    assert not space.contains(np.array([1, 2, 0]))
    assert not space.contains(np.array([1.0, 2.0]))  # not an integer array
    assert not space.contains(1)
    grid = MultiDiscrete(np.array([[2, 3], [4, 5]]))
    assert grid.shape == (2, 2)
    assert grid.contains(np.array([[1, 2], [3, 4]], dtype=np.int32))
    assert not grid.contains(np.array([1, 2, 3, 4]))


def test_multi_discrete_indexing_gives_discrete_subspaces():
    space = MultiDiscrete([2, 3, 4])
    assert len(space) == 3
    assert space[1] == Discrete(3)
    assert space[1:] == MultiDiscrete([3, 4])


def test_multi_discrete_rejects_non_positive_entries():
    with pytest.raises(ValueError):
        MultiDiscrete([2, 0])


def test_dict_keeps_insertion_order_and_is_a_mapping():
    space = Dict({"z": Discrete(2), "a": Box(0.0, 1.0, shape=(1,))})
    assert list(space.keys()) == ["z", "a"]
    assert list(space.sample().keys()) == ["z", "a"]
    assert space["z"] == Discrete(2)
    assert [k for k, _ in space.items()] == ["z", "a"]
    assert len(space) == 2
    assert Dict(z=Discrete(2), a=Box(0.0, 1.0, shape=(1,))) == space


def test_dict_contains_rejects_missing_or_extra_keys_and_bad_values():
    space = Dict({"a": Discrete(2), "b": Box(0.0, 1.0, shape=(2,))})
    good = {"a": 1, "b": np.array([0.5, 0.5], dtype=np.float32)}
    assert space.contains(good)
    assert not space.contains({"a": 1})
    assert not space.contains({**good, "c": 0})
    assert not space.contains({"a": 2, "b": good["b"]})
    assert not space.contains([1, good["b"]])
    with pytest.raises(TypeError):
        Dict({"a": 3})


def test_tuple_contains_tuples_and_lists_of_the_right_length():
    space = Tuple([Discrete(2), Box(0.0, 1.0, shape=(1,))])
    value = (1, np.array([0.5], dtype=np.float32))
    assert space.contains(value) and space.contains(list(value))
    assert not space.contains((1,))
    assert not space.contains((1, np.array([0.5], dtype=np.float32), 0))
    assert not space.contains((2, np.array([0.5], dtype=np.float32)))
    assert not space.contains({"0": 1})
    assert len(space) == 2 and space[0] == Discrete(2)
    assert isinstance(space.sample(), tuple)


def test_equality():
    assert Box(-1.0, 1.0, shape=(2,)) == Box(np.array([-1.0, -1.0]), np.array([1.0, 1.0]))
    assert Box(-1.0, 1.0, shape=(2,)) != Box(-1.0, 2.0, shape=(2,))
    assert Box(-1.0, 1.0, shape=(2,)) != Box(-1.0, 1.0, shape=(3,))
    assert Box(-1.0, 1.0, shape=(2,)) != Box(-1.0, 1.0, shape=(2,), dtype=np.float64)
    assert Discrete(3) == Discrete(3) and Discrete(3) != Discrete(4) and Discrete(3) != Discrete(3, start=1)
    assert MultiDiscrete([2, 3]) == MultiDiscrete(np.array([2, 3])) and MultiDiscrete([2, 3]) != MultiDiscrete([3, 2])
    assert nested_space() == nested_space()
    assert Dict({"a": Discrete(2), "b": Discrete(3)}) == Dict({"b": Discrete(3), "a": Discrete(2)})
    assert Dict({"a": Discrete(2)}) != Dict({"a": Discrete(3)})
    assert Tuple([Discrete(2)]) == Tuple((Discrete(2),)) and Tuple([Discrete(2)]) != Tuple([Discrete(3)])
    assert Discrete(2) != Box(0, 1, shape=(), dtype=np.int64)


def test_repr_reads_like_gymnasium():
    assert repr(Box(-1.0, 1.0, shape=(2,))) == "Box(-1.0, 1.0, (2,), float32)"
    assert repr(Box(np.array([0.0, -1.0]), np.array([1.0, 2.0]))) == "Box([ 0. -1.], [1. 2.], (2,), float32)"
    assert repr(Discrete(2)) == "Discrete(2)"
    assert repr(Discrete(3, start=-1)) == "Discrete(3, start=-1)"
    assert repr(MultiDiscrete([2, 3])) == "MultiDiscrete([2 3])"
    assert repr(Tuple([Discrete(2), Discrete(3)])) == "Tuple(Discrete(2), Discrete(3))"
    assert repr(Dict({"a": Discrete(2), "b": Box(0.0, 1.0, shape=(1,))})) == \
        "Dict('a': Discrete(2), 'b': Box(0.0, 1.0, (1,), float32))"


def test_batch_space_of_a_box_tiles_its_bounds():
    batched = batch_space(cartpole_observation_space(), 3)
    assert isinstance(batched, Box)
    assert batched.shape == (3, 4) and batched.dtype == np.float32
    assert np.array_equal(batched.low, np.tile(cartpole_observation_space().low, (3, 1)))
    assert np.array_equal(batched.high[2], cartpole_observation_space().high)
    assert batched.contains(batched.sample())
    grid = batch_space(Box(0, 5, shape=(2, 3), dtype=np.int16), 4)
    assert grid.shape == (4, 2, 3) and grid.dtype == np.int16


def test_batch_space_of_discrete_is_a_multi_discrete():
    assert batch_space(Discrete(2), 4) == MultiDiscrete(np.full(4, 2))
    shifted = batch_space(Discrete(3, start=1), 2)
    assert np.array_equal(shifted.start, [1, 1]) and shifted.contains(np.array([1, 3]))
    assert not shifted.contains(np.array([0, 3]))


def test_batch_space_of_multi_discrete_adds_a_leading_dimension():
    batched = batch_space(MultiDiscrete(np.array([[2, 3], [4, 5]])), 3)
    assert isinstance(batched, MultiDiscrete)
    assert batched.shape == (3, 2, 2)
    assert np.array_equal(batched.nvec[1], [[2, 3], [4, 5]])


def test_batch_space_of_containers_batches_every_child():
    batched = batch_space(nested_space(), 5)
    assert isinstance(batched, Dict) and list(batched.keys()) == ["position", "inner", "color"]
    assert batched["position"] == Box(-1.0, 1.0, shape=(5, 2))
    assert batched["color"] == MultiDiscrete(np.full(5, 5))
    inner = batched["inner"]
    assert isinstance(inner, Tuple)
    assert inner[0] == MultiDiscrete(np.full(5, 3), start=np.full(5, -1))
    assert inner[1].shape == (5, 2, 2)
    assert inner[2]["speed"].shape == (5, 3) and inner[2]["speed"].dtype == np.float64
    batched.seed(0)
    assert batched.contains(batched.sample())


def test_batch_space_copies_the_generator_of_a_seeded_space():
    space = Box(-1.0, 1.0, shape=(2,), seed=9)
    batched = batch_space(space, 1)
    assert np.array_equal(batched.sample()[0], space.sample())


def test_batch_space_rejects_other_types_and_bad_counts():
    with pytest.raises(TypeError):
        batch_space("not a space", 2)
    with pytest.raises(ValueError):
        batch_space(Discrete(2), 0)
