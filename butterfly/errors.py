"""Errors a user can cause and fix: the CLI prints their message on one line, no traceback;
and the exit statuses they end a command with."""

EXIT_CODES = """exit status:
  0    success
  1    user error: a bad option, file or run directory (one line on stderr, no traceback)
  2    usage error (an unknown flag or a missing argument)
  3    parse: the answer is an abstention
  4    run: incomplete after provider errors (re-run the same command to complete it)
  5    run, sequential, score: the run failed (the provider refused its calls; the reason is
       on stderr and in the manifest)
  6    run, sequential: stopped by --max-cost before a call could exceed it (status budget;
       re-run with a larger --max-cost to complete it)
  130  interrupted (answers so far are kept; re-run the same command to resume)"""
"""The exit statuses of the command line (``butterfly --help`` shows them)."""


class UserError(Exception):
    """Bad input from the user (a file, an option, a run directory). Exit status 1."""


class RunFailed(UserError):
    """A run the provider refused (a bad key, an unknown model, a rejected parameter): every
    further call would be refused the same way. Exit status 5."""


class BudgetStopped(UserError):
    """``--max-cost`` stopped the work before a call could take it over the limit; the answers
    so far are kept and a larger budget continues it. Exit status 6."""
