"""The error type a user can cause; the CLI prints it as one line, never a traceback."""


class UserError(Exception):
    """Bad input (a malformed task, a missing GPU, a wrong option): says what and how to fix."""


class Interrupted(Exception):
    """Ctrl-C stopped a command; the message says what was kept and how to resume (exit 130)."""
