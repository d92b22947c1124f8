"""The one error type a user can cause; the CLI prints its message as one line, never a traceback."""


class UserError(Exception):
    """Bad input: a malformed task file, a missing GPU, a wrong option. The message says what and how to fix."""
