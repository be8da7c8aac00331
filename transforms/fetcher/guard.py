"""Guards around every HTTP connection of the fetcher: where it may connect, and for how long.

* **Address check at connect time.** urllib3 resolves a host name and connects; right after the
  TCP connection is made (before TLS, before any byte of the request), the address actually
  connected to is checked against the address policy. A name that resolves, or re-resolves
  (DNS rebinding), to a denied address is refused there. Not used through a proxy: then the
  peer is the proxy, and names are the proxy's to resolve.
* **A deadline per request.** A socket timeout bounds each read, not a whole request: a server
  that sends a byte every few seconds would hold a fetch thread for ever. The `Watchdog`
  thread knows the deadline of every request in flight and the sockets it uses, and shuts them
  down when it has passed, so no server or proxy can stretch a request beyond it;
  `expire_all()` does the same at once for every request in flight, and refuses every later one
  (the fetch time limit). A request's sockets are watched from the moment they are connected,
  not from when the request is sent: urllib3 opens an HTTPS connection (the proxy's CONNECT
  answer, the TLS handshake) before it sends the request, and a pooled connection is watched
  again by each request that reuses it. The watchdog keeps its own duplicate of each socket:
  http.client detaches the socket from its connection when a response says `Connection: close`
  (as proxies often do) and reads the body through the response alone.
"""

import ipaddress
import os
import socket
import threading
import time
from typing import Dict, List, Optional

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from beamcrawl.transforms.policy.addresses import AddressPolicy

__all__ = ['DeniedAddress', 'RequestCut', 'Watchdog', 'guarded_pool_classes']


class DeniedAddress(Exception):
    """A connection went to an address the policy refuses; no request was sent."""


class RequestCut(OSError):
    """The request's time was up before this step (its deadline, or the fetch time limit)."""


class _Request:
    """One request in flight: its deadline and the sockets it has used (our duplicates)."""

    __slots__ = ('deadline', 'cut', 'sockets', 'inodes')

    def __init__(self, deadline: float, cut: bool):
        self.deadline, self.cut = deadline, cut
        self.sockets: List[socket.socket] = []
        self.inodes = set()


class Watchdog:
    """Deadlines of the requests in flight, one per fetch thread."""

    def __init__(self):
        self._cond = threading.Condition()
        self._requests: Dict[int, _Request] = {}          # thread → its request in flight
        self._all_expired = False
        self._thread: Optional[threading.Thread] = None
        self._closed = False

    # -- the fetch thread's side ------------------------------------------------------------
    def begin(self, deadline: float) -> None:
        """This thread's next request must be over by `deadline` (time.time()). After
        `expire_all()` it is cut before it starts."""
        with self._cond:
            self._requests[threading.get_ident()] = _Request(deadline, self._all_expired)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name='http-watchdog',
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def end(self) -> bool:
        """This thread's request is over; True when the watchdog cut it."""
        with self._cond:
            request = self._requests.pop(threading.get_ident(), None)
        if request is None:
            return False
        for sock in request.sockets:
            sock.close()
        return request.cut

    def check(self) -> None:
        """Raises RequestCut when this thread's request has been cut."""
        with self._cond:
            request = self._requests.get(threading.get_ident())
            if request is not None and request.cut:
                raise RequestCut('request cut at its deadline or at the fetch time limit')

    def attach(self, sock: socket.socket) -> None:
        """Watches a socket this thread's request uses (a guarded connection calls it once it
        is connected, and when it sends a request): when the request's time is up, the
        socket is shut down. Raises RequestCut when it is up already."""
        with self._cond:
            request = self._requests.get(threading.get_ident())
            if request is None:
                return
            if request.cut:
                raise RequestCut('request cut at its deadline or at the fetch time limit')
            try:
                fd = sock.fileno()
                inode = os.fstat(fd).st_ino
                if inode and inode in request.inodes:
                    return                      # watched already (a new connection's request)
                # A duplicate: it stays valid when the socket is wrapped (TLS) or handed
                # from the connection to the response; shutting it down ends the connection.
                watched = socket.socket(fileno=os.dup(fd))
            except OSError:
                return                          # closed already: nothing left to cut
            request.inodes.add(inode)
            request.sockets.append(watched)

    # -- cutting ------------------------------------------------------------------------------
    def expire_all(self) -> None:
        """Cuts every request in flight now, and every later one as it starts."""
        with self._cond:
            self._all_expired = True
            for request in self._requests.values():
                self._cut(request)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    @staticmethod
    def _cut(request: _Request) -> None:
        request.cut = True
        for sock in request.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)     # wakes a blocked read at once
            except OSError:
                pass

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.time()
                for request in self._requests.values():
                    if not request.cut and request.deadline <= now:
                        self._cut(request)
                soonest = min((r.deadline for r in self._requests.values() if not r.cut),
                              default=None)
                self._cond.wait(None if soonest is None else max(0.0, soonest - now))


def guarded_pool_classes(watchdog: Watchdog, policy: Optional[AddressPolicy]):
    """{'http': pool class, 'https': pool class} whose connections register with the watchdog
    and, when `policy` is given, refuse denied peers."""

    class _Guarded:
        peer_address = None        # the address connected to (for WARC-IP-Address)

        def _new_conn(self):
            watchdog.check()              # a request whose time is up opens no connection
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
            try:
                watchdog.attach(sock)     # before a CONNECT, a TLS handshake, the request
            except RequestCut:
                sock.close()
                raise
            return sock

        def request(self, *args, **kwargs):
            if self.sock is not None:
                watchdog.attach(self.sock)      # a pooled connection, reused
            else:
                watchdog.check()
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
