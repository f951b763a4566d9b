"""Errors a user can cause and fix: the CLI prints them in one line, without a traceback."""


class UserError(Exception):
    """What is wrong and how to fix it, in one or two lines."""

    exit_code = 1
