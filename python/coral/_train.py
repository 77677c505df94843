"""coral.train: `coral train` in this process."""

import json
import sys
import warnings

from . import _coral
from ._errors import EnvError, from_actor_failure

# Exit codes of `coral` (docs/cli.md).
_OK, _REJECTED = _coral.exit_ok, _coral.exit_rejected
# The start of learners' errors::init_interrupted.
_INIT_INTERRUPTED = "interrupted while drawing the network's initial weights"


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped coral.train; the run ended in order (checkpoint written
    when a checkpoint dir was given). `result` is its final result."""

    def __init__(self, result):
        super().__init__("coral.train stopped by SIGINT")
        self.result = result


def _flag_args(flags):
    args = []
    for key, value in flags.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            # --flag=true: a switch reads it as on; a flag that takes a value
            # refuses 'true' naming itself (a bare --total-steps would take
            # the next token for its value).
            args.append(f"{flag}=true")
        elif key == "env_arg" and isinstance(value, dict):
            for k, v in value.items():
                text = ("true" if v else "false") if isinstance(v, bool) else str(v)
                args += [flag, f"{k}={text}"]
        elif isinstance(value, (list, tuple)):
            # One token per element (--hidden=64 --hidden=64, which a list
            # flag adds up): a list given to a single-value flag is then
            # refused naming that flag, not as a stray argument. An empty
            # list is the flag's empty value (--hidden=), refused as such.
            args += [f"{flag}={v}" for v in value] if value else [f"{flag}="]
        else:
            # One token, so that a value given to a switch (keep_going=1,
            # keep_going="maybe") is read or refused as that switch's value,
            # naming it, not left over as a stray argument.
            args.append(f"{flag}={value}")
    return args


def train(env="cartpole", algo="ppo", *, on_row=None, verbose=True, **flags):
    """Runs `coral train --env ENV --algo ALGO --flag value ...` in-process and
    returns its final result (the JSON line) as a dict.

    Every flag of `coral train --help` is a keyword: underscores for dashes
    (total_steps=100000, run_dir="runs/x"); True for a switch (keep_going=True;
    1/0 and "true"/"false" are read as on the command line, `--keep-going=1`);
    env_arg={"key": value} for env settings; hidden=[64, 64] for lists.
    `on_row(row)` gets each metrics row as a dict of floats (the columns of
    metrics.csv); returning False stops the run. `verbose` prints progress lines.
    Bad flags raise ValueError; an env that fails raises coral.EnvError; Ctrl-C
    stops the run in order and raises coral.TrainingInterrupted (a
    KeyboardInterrupt carrying the result)."""
    args = ["--env", str(env), "--algo", str(algo)] + _flag_args(flags)
    state = {"error": None, "stopped": False}

    def line(text):
        if verbose and not text.startswith("{"):
            print(text, file=sys.stdout, flush=True)

    def row(header, values):
        if state["stopped"]:
            return False  # the run's last row, after the callback asked to stop
        try:
            parsed = dict(zip(header.split(","), (float(x) for x in values.split(","))))
            keep_going = on_row(parsed)
        except BaseException as e:  # noqa: BLE001 - re-raised after the run ends in order
            state["error"] = e
            state["stopped"] = True
            return False
        if keep_going is False:
            state["stopped"] = True
            return False
        return True

    code, last, err = _coral.train(args, line, row if on_row is not None else None)
    if state["error"] is not None:
        raise state["error"]
    # stderr holds the run's warnings (a checkpoint skipped, no plot, ...)
    # and, when it failed, its error line last: warnings become Python
    # warnings, the error the exception's message.
    errors = []
    for text in err.splitlines():
        if text.startswith("warning: "):
            warnings.warn(text[len("warning: "):], RuntimeWarning, stacklevel=2)
        elif text.strip():
            errors.append(text)
    message = "\n".join(errors).strip()
    if message.startswith("error: "):
        message = message[len("error: "):]
    if code == _REJECTED:
        raise ValueError(message)
    if code != _OK and message.startswith(_INIT_INTERRUPTED):
        raise KeyboardInterrupt(message)  # Ctrl-C while a large network's weights were drawn: no run started
    if code != _OK:
        failure = from_actor_failure("", message)
        raise failure
    try:
        result = json.loads(last)
    except ValueError:
        raise RuntimeError(f"coral train ended without its result line: {last!r}") from None
    if result.get("interrupted") and not state["stopped"]:
        raise TrainingInterrupted(result)
    return result


__all__ = ["train", "TrainingInterrupted", "EnvError"]
