"""SIGINT and SIGTERM: stop cleanly, keep what is done, say how to go on.

The command line installs `handle_signals()` in the main thread. By default a signal raises
KeyboardInterrupt there, which unwinds every update (temporary versions removed, locks released,
nothing installed). A stage that can stop gracefully runs inside `graceful()`: then the first
signal only sets INTERRUPTED, which the fetcher watches (no new request, requests in flight
finish, results are kept for a resume), and a second signal interrupts at once.
"""

import contextlib
import signal
import threading
from typing import Iterator, Optional

__all__ = ['INTERRUPTED', 'handle_signals', 'graceful', 'exit_code', 'signal_name']

INTERRUPTED = threading.Event()
_state = {'graceful': False, 'signal': None}
_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


def _handler(signum, frame):  # pylint: disable=unused-argument
    first = not INTERRUPTED.is_set()
    _state['signal'] = signum
    INTERRUPTED.set()
    if not (first and _state['graceful']):
        raise KeyboardInterrupt


def handle_signals() -> None:
    """Installs the handlers (main thread only) and clears an earlier interrupt."""
    INTERRUPTED.clear()
    _state['signal'] = None
    if threading.current_thread() is threading.main_thread():
        for sig in _CODES:
            signal.signal(sig, _handler)


@contextlib.contextmanager
def graceful() -> Iterator[None]:
    """Within the block, a first signal only sets INTERRUPTED."""
    before = _state['graceful']
    _state['graceful'] = True
    try:
        yield
    finally:
        _state['graceful'] = before


def exit_code() -> int:
    """130 after SIGINT, 143 after SIGTERM."""
    return _CODES.get(_state['signal'], 130)


def signal_name() -> Optional[str]:
    sig = _state['signal']
    return None if sig is None else signal.Signals(sig).name
