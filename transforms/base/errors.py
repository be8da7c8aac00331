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


_REMOTE = None


def from_worker(error: BaseException):
    """The UserError that a worker process raised, when `error` is the runner's report of it
    (Beam sends a worker's exception to the command as text: its traceback, ending with
    `beamcrawl.transforms.base.errors.InputError: message [while running 'Step']`); else None."""
    import re
    global _REMOTE  # pylint: disable=global-statement
    if _REMOTE is None:
        _REMOTE = re.compile(r'beamcrawl\.transforms\.base\.errors\.(\w+): (.*?)'
                             r'(?: \[while running [^\]]*\])*\s*$', re.M)
    matches = list(_REMOTE.finditer(str(error)))
    if not matches:
        return None
    name, message = matches[-1].group(1), matches[-1].group(2)
    kind = {cls.__name__: cls for cls in (UserError, ConfigError, LockedError, InputError)}.get(
        name)
    return kind(message) if kind is not None else None


def refused_locally(what: str, denied: int, filtered: int, after: str = '') -> UserError:
    """The error of a step in which local settings refused every URL (inject, generate): our own
    address policy or URL filters, not anything a server said. Names the keys to change."""
    reasons = ([f'{denied} by the address policy (allow ranges with http.address.allow)']
               if denied else [])
    if filtered:
        reasons.append(f'{filtered} by the URL filters (urlfilter.regex.file, '
                       f'urlfilter.scheme.allowed)')
    return UserError(f'every {what} was refused by local settings: {"; ".join(reasons)}'
                     + (f'; {after}' if after else ''))
