"""Errors a user can cause and fix: the CLI prints their message on one line, no traceback."""


class UserError(Exception):
    """Bad input from the user (a file, an option, a run directory). Exit status 1."""


class RunFailed(UserError):
    """A run the provider refused (a bad key, an unknown model, a rejected parameter): every
    further call would be refused the same way. Exit status 5."""


class BudgetStopped(UserError):
    """``--max-cost`` stopped the work before a call could take it over the limit; the answers
    so far are kept and a larger budget continues it. Exit status 6."""
