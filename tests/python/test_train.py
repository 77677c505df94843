"""coral.train, and Ctrl-C inside coral, against the real extension."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import coral


def test_train_solves_cartpole_and_returns_the_result():
    rows = []
    result = coral.train(env="cartpole", algo="ppo", seed=1, no_run_dir=True, verbose=False,
                         on_row=rows.append)
    assert result["solved"] is True
    assert result["mean_return"] >= 475
    assert result["env"] == "cartpole" and result["algo"] == "ppo"
    assert rows, "the row callback got no metrics row"
    assert {"seconds", "env_steps", "mean_return", "updates"} <= set(rows[-1])
    assert rows[-1]["env_steps"] <= result["env_steps"]


def test_a_row_callback_can_stop_the_run_and_its_exception_comes_back():
    seen = []

    def stop_after_three(row):
        seen.append(row)
        return len(seen) < 3

    result = coral.train(env="cartpole", total_steps=10**7, keep_going=True, no_run_dir=True, verbose=False,
                         on_row=stop_after_three)
    assert len(seen) == 3
    assert result["interrupted"] is True

    def broken(row):
        raise ZeroDivisionError("in my callback")

    with pytest.raises(ZeroDivisionError, match="in my callback"):
        coral.train(env="cartpole", total_steps=10**7, keep_going=True, no_run_dir=True, verbose=False,
                    on_row=broken)


def test_progress_lines_reach_stdout_when_verbose(capsys):
    coral.train(env="cartpole", total_steps=3000, no_run_dir=True, progress_seconds=0.01)
    out = capsys.readouterr().out
    assert "coral train: env cartpole" in out


@pytest.mark.parametrize("spin", ["auto", 0, 50])
def test_spin_us_takes_auto_or_a_count(spin):
    result = coral.train(env="cartpole", total_steps=2000, spin_us=spin, no_run_dir=True, verbose=False)
    assert result["env_steps"] >= 2000


def test_a_whole_number_given_as_a_float_is_taken():
    # 1e3 and 8.0 reach coral as "1000.0" and "8.0": whole values, taken as
    # such (CLI11 alone refused them); 1500.5 is not whole.
    result = coral.train(total_steps=1e3, num_envs=8.0, no_run_dir=True, verbose=False)
    assert result["env_steps"] == 1000
    with pytest.raises(ValueError, match="^--total-steps: '1500.5' is not a whole number$"):
        coral.train(total_steps=1500.5, no_run_dir=True, verbose=False)


def test_a_switch_takes_a_number_as_on_the_command_line():
    # keep_going=1 is --keep-going=1: the switch, on (it once failed as a
    # stray argument "1"), and 0 is off. A target of 5 is reached within
    # about 3,400 steps: off, the run ends there; on, it runs all 6,000.
    flags = dict(target_return=5, total_steps=6000, no_run_dir=True, verbose=False)
    on = coral.train(keep_going=1, **flags)
    off = coral.train(keep_going=0, **flags)
    assert on["solved"] and off["solved"]
    assert on["env_steps"] == 6000
    assert off["env_steps"] < 6000


def test_a_list_goes_to_a_list_flag_and_is_refused_by_a_single_value_flag(capsys):
    # hidden=[16, 8] is --hidden=16 --hidden=8: both widths reach the
    # networks (cartpole's actor 4-16-8-2 and critic 4-16-8-1 have 459
    # parameters; [16] alone would give 211). seed=[1, 2] once failed as
    # "argument not expected: 2", naming no flag.
    result = coral.train(hidden=[16, 8], total_steps=1000, no_run_dir=True)
    assert result["env_steps"] == 1000
    assert ", 459 parameters on the " in capsys.readouterr().out
    with pytest.raises(ValueError, match="^--seed: "):
        coral.train(seed=[1, 2], total_steps=1000, no_run_dir=True, verbose=False)
    with pytest.raises(ValueError, match="^--hidden: '' is not a whole number$"):
        coral.train(hidden=[], total_steps=1000, no_run_dir=True, verbose=False)


def test_conv_takes_one_layer_a_value_or_a_list_and_refuses_a_window_larger_than_the_grid(capsys):
    # conv="8:3" is one layer; conv=["8:3", "4:2:2"] two (--conv=8:3
    # --conv=4:2:2), 10x10x4 -> 8x8x8 -> 4x4x4, then --hidden.
    coral.train(env="minatar/breakout", conv="8:3", hidden=[16], total_steps=512, no_run_dir=True)
    assert ", conv 10x10x4 8:3:1, " in capsys.readouterr().out
    coral.train(env="minatar/breakout", conv=["8:3", "4:2:2"], hidden=[16], total_steps=512, no_run_dir=True)
    assert ", conv 10x10x4 8:3:1,4:2:2, " in capsys.readouterr().out
    with pytest.raises(ValueError, match="^--conv: layer 1 \\(16:11\\) has a 11x11 window over a 10x10 grid"):
        coral.train(env="minatar/breakout", conv="16:11", total_steps=512, no_run_dir=True, verbose=False)
    with pytest.raises(ValueError, match="^--conv: 16:3 needs a grid observation"):
        coral.train(conv="16:3", total_steps=512, no_run_dir=True, verbose=False)


def test_r2d2_takes_an_overlap_of_zero(capsys):
    # 0 once stood for "seq-len / 2" inside, so seq_overlap=0 ran with half the sequence.
    coral.train(algo="r2d2", seq_overlap=0, total_steps=1500, learning_starts=500, no_run_dir=True)
    assert "(burn-in 10, overlap 0)" in capsys.readouterr().out
    coral.train(algo="r2d2", total_steps=1500, learning_starts=500, no_run_dir=True)
    assert "(burn-in 10, overlap 10)" in capsys.readouterr().out


@pytest.mark.parametrize("algo, expected", [
    ("ppo", {"horizon": "64", "learning-rate": "0.005", "gamma": "0.99", "lstm": "0"}),
    ("dqn", {"replay-capacity": "100000", "replay-batch": "128", "learning-rate": "0.0005", "gamma": "0.99"}),
    ("r2d2", {"replay-capacity": "5000", "replay-batch": "32", "learning-rate": "0.001", "target-update": "100",
              "lstm": "64"}),
])
def test_train_gets_each_algorithm_s_own_defaults(tmp_path, algo, expected):
    # The descriptor's defaults, as `coral train --algo ALGO` and
    # learners::train get them (tests/apps/train_command_test.cpp compares those two).
    coral.train(algo=algo, total_steps=2000, run_dir=str(tmp_path), verbose=False)
    settings = {}
    for line in (tmp_path / "config.toml").read_text().splitlines():
        if " = " in line:
            key, value = line.split(" = ", 1)
            settings[key] = value
    assert settings["algo"] == f'"{algo}"'
    for key, value in expected.items():
        assert settings[key] == value, key


def test_train_writes_a_tensorboard_event_file_unless_no_tensorboard(tmp_path):
    coral.train(total_steps=1000, run_dir=str(tmp_path / "on"), verbose=False)
    coral.train(total_steps=1000, run_dir=str(tmp_path / "off"), no_tensorboard=True, verbose=False)
    assert len(list((tmp_path / "on").glob("events.out.tfevents.*"))) == 1
    assert list((tmp_path / "off").glob("*tfevents*")) == []
    assert (tmp_path / "off" / "metrics.csv").exists()


def test_train_records_clips_with_video_every(tmp_path):
    result = coral.train(total_steps=4096, executor="single", progress_seconds=0, run_dir=str(tmp_path / "run"),
                         video_every=2, verbose=False)
    assert result["updates"] == 8
    clips = sorted(p.name for p in (tmp_path / "run" / "videos").iterdir())
    # The first clip asked for (update 2) is always written; later ones may be skipped while one is written.
    assert clips[0] == "update-000002.mp4"
    assert all(name.startswith("update-") and name.endswith(".mp4") for name in clips)
    with pytest.raises(ValueError, match=r"^--video-every needs a run dir"):
        coral.train(total_steps=4096, no_run_dir=True, video_every=2, verbose=False)


@pytest.mark.parametrize("flags, error, match", [
    (dict(env="nope"), ValueError, "nope"),
    (dict(algo="a3c"), ValueError, "--algo"),
    (dict(num_envs=0), ValueError, "--num-envs"),
    (dict(no_such_flag=1), ValueError, "--no-such-flag"),
    (dict(learning_rate="fast"), ValueError, "--learning-rate"),
    (dict(resume=True), ValueError, "--resume"),
    (dict(spin_us="fast"), ValueError, "--spin-us"),
    (dict(spin_us=-1), ValueError, "--spin-us"),
    # A value for a switch is read as the switch's value, and refused naming it.
    (dict(keep_going="maybe"), ValueError, "--keep-going"),
    # True for a flag that takes a value is refused naming it (it once took
    # the next flag for its value).
    (dict(total_steps=True), ValueError, "^--total-steps: 'true' is not a whole number$"),
    (dict(algo="dqn", gae_lambda=0.5), ValueError, "^--gae-lambda: PPO only; --algo dqn does not take it$"),
    # At its default value too: a keyword given is a flag given.
    (dict(algo="ppo", replay_capacity=100000), ValueError,
     "^--replay-capacity: DQN and R2D2 only; --algo ppo does not take it$"),
    (dict(env="faulty", env_arg={"throw_step": 50, "env": 1}, total_steps=5000), coral.EnvError, "env 1 in group"),
    # An empty name once meant the flag's default, silently: for
    # checkpoint_dir, no checkpoints at all.
    (dict(checkpoint_dir=""), ValueError, "^--checkpoint-dir: expected a directory name, got an empty value$"),
    (dict(run_dir="", no_run_dir=False), ValueError, "^--run-dir: expected a directory name, got an empty value$"),
])
def test_train_errors_are_python_exceptions_with_coral_s_message(flags, error, match):
    flags.setdefault("no_run_dir", True)
    with pytest.raises(error, match=match):
        coral.train(verbose=False, **flags)


def run_child(code, send_after, wait_for=None, timeout=120):
    """Runs `code` in a fresh interpreter; sends SIGINT `send_after` seconds
    after it printed `wait_for` (or started). Returns (stdout, returncode).

    Each child runs forever (an endless loop, or 10**9 steps) unless the
    SIGINT stops it, so the check is that it exits at all: one still running
    `timeout` seconds later is killed and fails the test. No wall time is
    asserted beyond that (a loaded CI machine may take seconds to exit)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=env)
    if wait_for is not None:
        deadline = time.monotonic() + timeout
        line = ""
        while wait_for not in line:
            assert time.monotonic() < deadline, "the child never got ready"
            line = child.stdout.readline()
            assert line, "the child ended before it got ready"
    time.sleep(send_after)
    child.send_signal(signal.SIGINT)
    try:
        out, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        out, _ = child.communicate()
        pytest.fail(f"the child still ran {timeout} s after SIGINT: the interrupt went unseen\n{out}")
    return out, child.returncode


def test_ctrl_c_inside_step_raises_keyboard_interrupt_promptly():
    code = """
        import time, numpy as np, coral
        class Slow:
            def __init__(self):
                self.observation_space = coral._spaces._impl.Box(low=-1, high=1, shape=(1,), dtype=np.float32)
                self.action_space = coral._spaces._impl.Discrete(2)
            def reset(self, seed=None, options=None):
                return np.zeros(1, dtype=np.float32), {}
            def step(self, action):
                time.sleep(0.05)
                return np.zeros(1, dtype=np.float32), 0.0, False, False, {}
        coral.register("slow", Slow)
        env = coral.make_vec("slow", 2)
        env.reset()
        print("ready", flush=True)
        try:
            while True:
                env.step(np.zeros(2, dtype=np.int64))
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        env.reset()  # an interrupted step leaves no batch in hand: reset, and go on
        env.step(np.zeros(2, dtype=np.int64))
        env.close()
        print("closed", flush=True)
    """
    out, code_ = run_child(code, 0.3, wait_for="ready")
    assert "interrupted" in out and "closed" in out, out
    assert code_ == 0


def test_ctrl_c_inside_recv_on_cpp_envs_raises_keyboard_interrupt():
    code = """
        import numpy as np, coral
        env = coral.make_vec("delay", 4, batch_size=2, mean_us=200000)
        env.async_reset()
        print("ready", flush=True)
        try:
            while True:
                obs, rew, term, trunc, infos = env.recv()
                env.send(np.zeros(2, dtype=np.int64), infos["env_id"])
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        env.close()
    """
    out, code_ = run_child(code, 0.3, wait_for="ready")
    assert "interrupted" in out, out
    assert code_ == 0


def test_ctrl_c_stops_train_with_a_checkpoint_that_resume_continues(tmp_path):
    ckpt = tmp_path / "ckpt"
    code = f"""
        import json, coral
        try:
            coral.train(env="cartpole", total_steps=10**9, keep_going=True, checkpoint_dir={str(ckpt)!r},
                        no_run_dir=True, progress_seconds=0.1)
        except coral.TrainingInterrupted as e:
            print("RESULT " + json.dumps(e.result), flush=True)
    """
    # SIGINT once the run reports progress (its handler is in place), however slow the machine.
    out, code_ = run_child(code, 0.2, wait_for="steps")
    assert code_ == 0, out
    line = [x for x in out.splitlines() if x.startswith("RESULT ")]
    assert line, out
    result = json.loads(line[0][len("RESULT "):])
    assert result["interrupted"] is True
    assert result["checkpoint"] and os.path.exists(result["checkpoint"])
    resumed = coral.train(env="cartpole", total_steps=result["env_steps"] + 2000, keep_going=True,
                          checkpoint_dir=str(ckpt), resume=True, no_run_dir=True, verbose=False)
    assert resumed["resumed_from"] == result["checkpoint"]
    assert resumed["env_steps"] == result["env_steps"] + 2000


def test_ctrl_c_as_train_starts_stops_it_instead_of_going_unseen():
    # A SIGINT that Python's own handler catches just before coral's takes
    # over used to wait, unseen, for the whole run (here 10**9 steps).
    code = """
        import coral
        try:
            # "ready" inside the try: a SIGINT that lands before coral.train
            # is entered is a KeyboardInterrupt as well, not a traceback.
            print("ready", flush=True)
            coral.train(env="cartpole", total_steps=10**9, keep_going=True, no_run_dir=True, verbose=False)
            print("returned", flush=True)
        except KeyboardInterrupt as e:
            print("interrupted", type(e).__name__, flush=True)
    """
    for _ in range(3):
        out, code_ = run_child(code, 0.0, wait_for="ready")
        assert "interrupted" in out, out
        assert code_ == 0


def blas_child(extra_env):
    """A short coral.train in a fresh interpreter with OpenBLAS's verbose
    output on; returns (its stderr, the kernel set OpenBLAS last reported)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env["OPENBLAS_VERBOSE"] = "2"
    env.update(extra_env)
    code = "import coral; coral.train(total_steps=2000, no_run_dir=True, verbose=False)"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert child.returncode == 0, child.stderr
    cores = [line[len("Core: "):] for line in child.stderr.splitlines() if line.startswith("Core: ")]
    return child.stderr, (cores[-1] if cores else None)


def cpu_can_do_better():
    """The kernel set coral would ask OpenBLAS for on this CPU (learners/blas_core.hpp), read from /proc/cpuinfo."""
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return None
    vendor = next((l.split(":", 1)[1].strip() for l in text.splitlines() if l.startswith("vendor_id")), "")
    flags = set(next((l.split(":", 1)[1].split() for l in text.splitlines() if l.startswith("flags")), []))
    if vendor != "GenuineIntel" or not {"avx2", "fma"} <= flags:
        return None
    if {"avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl"} <= flags:
        return "SkylakeX"
    return "Haswell"


def test_train_names_the_openblas_kernels_to_ask_for_where_openblas_runs_its_generic_ones():
    err, core = blas_child({})
    if core is None:
        pytest.skip("this build's BLAS is not OpenBLAS")
    better = cpu_can_do_better()
    if core == "Prescott" and better is not None:
        assert f"Set OPENBLAS_CORETYPE={better} before the process starts" in err
    else:
        assert "OPENBLAS_CORETYPE=" not in err
    # Asked for, the generic kernels get no advice.
    err, core = blas_child({"OPENBLAS_CORETYPE": "Prescott"})
    assert core == "Prescott"
    assert "generic SSE3 kernels" not in err


def test_warnings_of_a_run_are_python_warnings_not_progress(tmp_path, capsys):
    # A directory named like a checkpoint is passed over with a warning: on
    # stderr for the command, a RuntimeWarning here, never a progress line.
    ckpt = tmp_path / "ckpt"
    first = coral.train(env="cartpole", total_steps=2048, keep_going=True, checkpoint_dir=str(ckpt),
                        no_run_dir=True, verbose=False)
    (ckpt / "checkpoint-999999999999.ckpt").mkdir()
    capsys.readouterr()
    with pytest.warns(RuntimeWarning, match=r"checkpoint-999999999999.ckpt' is not a regular file; skipped$"):
        resumed = coral.train(env="cartpole", total_steps=4096, keep_going=True, checkpoint_dir=str(ckpt),
                              resume=True, no_run_dir=True, verbose=True)
    assert resumed["resumed_from"] == first["checkpoint"]
    progress = capsys.readouterr().out
    assert "resumed from" in progress
    assert "; skipped" not in progress
