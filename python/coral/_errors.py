"""coral's exceptions."""

import re

__all__ = ["EnvError"]

_ENV_FAILED = re.compile(r"env (\d+) in group '[^']*' failed")


class EnvError(RuntimeError):
    """An env failed (it raised, or produced a NaN/infinite value), ending the run.

    ``env_id`` is the index of the env that failed, ``message`` coral's full text.
    """

    def __init__(self, message, env_id=None):
        super().__init__(message)
        self.message = message
        self.env_id = env_id


def from_actor_failure(actor, what):
    """The exception for a coral actor that failed: EnvError when it was an env."""
    match = _ENV_FAILED.search(what)
    if match is not None:
        return EnvError(what, env_id=int(match.group(1)))
    return RuntimeError(what)
