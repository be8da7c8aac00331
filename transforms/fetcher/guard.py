"""Guards around every HTTP connection of the fetcher: where it may connect, and for how long.

* **Address check at connect time.** urllib3 resolves a host name and connects; right after the
  TCP connection is made (before TLS, before any byte of the request), the address actually
  connected to is checked against the address policy. A name that resolves, or re-resolves
  (DNS rebinding), to a denied address is refused there. Not used through a proxy: then the
  peer is the proxy, and names are the proxy's to resolve.
* **A deadline per request.** A socket timeout bounds each read, not a whole request: a server
  that sends a byte every few seconds would hold a fetch thread for ever. The `Watchdog`
  thread knows the deadline of every request in flight and shuts the socket down when it has
  passed, so no server can stretch a request beyond it; `expire_all()` does the same at once
  for every request (the fetch time limit).
"""

import ipaddress
import socket
import threading
import time
from typing import Dict, Optional, Tuple

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from beamcrawl.transforms.policy.addresses import AddressPolicy

__all__ = ['DeniedAddress', 'Watchdog', 'guarded_pool_classes']


class DeniedAddress(Exception):
    """A connection went to an address the policy refuses; no request was sent."""


class Watchdog:
    """Deadlines of the requests in flight, one per fetch thread."""

    def __init__(self):
        self._cond = threading.Condition()
        self._watched: Dict[int, Tuple[float, object]] = {}    # thread → (deadline, connection)
        self._expired = set()
        self._deadline = threading.local()
        self._thread: Optional[threading.Thread] = None
        self._closed = False

    # -- the fetch thread's side ------------------------------------------------------------
    def begin(self, deadline: float) -> None:
        """This thread's next request must be over by `deadline` (time.time())."""
        self._deadline.value = deadline
        with self._cond:
            self._expired.discard(threading.get_ident())

    def end(self) -> bool:
        """This thread's request is over; True when the watchdog cut it."""
        self._deadline.value = None
        me = threading.get_ident()
        with self._cond:
            self._watched.pop(me, None)
            expired = me in self._expired
            self._expired.discard(me)
            return expired

    def watch(self, connection) -> None:
        """Called by a guarded connection when it sends a request."""
        deadline = getattr(self._deadline, 'value', None)
        if deadline is None:
            return
        with self._cond:
            self._watched[threading.get_ident()] = (deadline, connection)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name='http-watchdog',
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    # -- cutting ------------------------------------------------------------------------------
    def expire_all(self) -> None:
        """Cuts every request in flight now."""
        with self._cond:
            for thread, (_, connection) in list(self._watched.items()):
                self._cut(thread, connection)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _cut(self, thread: int, connection) -> None:
        self._watched.pop(thread, None)
        self._expired.add(thread)
        sock = getattr(connection, 'sock', None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)     # wakes a blocked read at once
            except OSError:
                pass

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.time()
                for thread, (deadline, connection) in list(self._watched.items()):
                    if deadline <= now:
                        self._cut(thread, connection)
                soonest = min((d for d, _ in self._watched.values()), default=None)
                self._cond.wait(None if soonest is None else max(0.0, soonest - now))


def guarded_pool_classes(watchdog: Watchdog, policy: Optional[AddressPolicy]):
    """{'http': pool class, 'https': pool class} whose connections register with the watchdog
    and, when `policy` is given, refuse denied peers."""

    class _Guarded:
        peer_address = None        # the address connected to (for WARC-IP-Address)

        def _new_conn(self):
            sock = super()._new_conn()
            try:
                self.peer_address = sock.getpeername()[0].split('%', 1)[0]
            except OSError:
                self.peer_address = None
            if policy is not None:
                peer = sock.getpeername()[0]
                reason = policy.denied(ipaddress.ip_address(peer.split('%', 1)[0]))
                if reason:
                    sock.close()
                    raise DeniedAddress(f'{self.host} resolved to a denied {reason}')
            return sock

        def request(self, *args, **kwargs):
            watchdog.watch(self)
            return super().request(*args, **kwargs)

    class GuardedHTTPConnection(_Guarded, HTTPConnection):
        pass

    class GuardedHTTPSConnection(_Guarded, HTTPSConnection):
        pass

    class GuardedHTTPConnectionPool(HTTPConnectionPool):
        ConnectionCls = GuardedHTTPConnection

    class GuardedHTTPSConnectionPool(HTTPSConnectionPool):
        ConnectionCls = GuardedHTTPSConnection

    return {'http': GuardedHTTPConnectionPool, 'https': GuardedHTTPSConnectionPool}
