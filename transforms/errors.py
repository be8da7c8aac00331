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


class Interrupted(UserError):
    """The user stopped the command (SIGINT: exit 130, SIGTERM: exit 143); the message says what
    was kept and how to go on."""

    def __init__(self, message: str, exit_code: int = 130):
        super().__init__(message)
        self.exit_code = exit_code
