"""Host name resolution for byIP queues and parts: one lookup per host, cached, thread-safe."""

import socket
import threading
from typing import Dict

__all__ = ['Resolver']


class Resolver:
    """host → IPv4 address ('' when the host does not resolve). Create one per worker (in a
    DoFn's setup), not in a constructor that gets pickled."""

    def __init__(self):
        self._cache: Dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, host: str) -> str:
        with self._lock:
            if host in self._cache:
                return self._cache[host]
        try:
            address = socket.gethostbyname(host)
        except (OSError, UnicodeError):
            address = ''
        with self._lock:
            self._cache[host] = address
        return address
