"""The error type a user can cause; the CLI prints it as one line, never a traceback."""

from enum import StrEnum
from typing import TypeVar

E = TypeVar("E", bound=StrEnum)


class UserError(Exception):
    """Bad input (a malformed task, a missing GPU, a wrong option): says what and how to fix."""


class Interrupted(Exception):
    """Ctrl-C stopped a command; the message says what was kept and how to resume (exit 130)."""


def choice(kind: type[E], name: str, what: str) -> E:
    """The member of `kind` named `name`, or a UserError naming `what` and the choices."""
    try:
        return kind(name)
    except ValueError:
        choices = ", ".join(m.value for m in kind)
        raise UserError(f"{what} {name!r}: choose {choices}") from None
