"""Errors the harness shows to users: one line that names the fix, no traceback."""


class HarnessError(Exception):
    """A user-facing error with a one-line message that names the fix."""
