"""Errors a user can cause and fix: the CLI prints their message on one line, no traceback."""


class UserError(Exception):
    """Bad input from the user (a file, an option, a run directory). Exit status 1."""
