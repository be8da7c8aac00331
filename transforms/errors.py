"""Error types that the command line turns into one line on stderr and an exit code."""


class UserError(Exception):
    """A mistake in the user's input (arguments, config, files): exit 2, one line, no traceback."""

    exit_code = 2


class ConfigError(UserError):
    """A configuration value or key is wrong."""


class LockedError(UserError):
    """A crawldb or linkdb is locked by another update (or a dead one left its lock behind)."""


class InputError(UserError):
    """An input file is missing, unreadable or corrupt."""
