"""A forwarding HTTP proxy on loopback, for tests: a real proxy between the fetcher and an origin
on another port, with connections of its own to the origin.

The test web (tests/testweb.py) is a proxy only in name: it answers absolute-form requests
itself, on the fetcher's own socket. This one forwards: a `GET http://host/path` becomes a
`GET /path` on a new connection to the origin (`Connection: close` both ways, the response
relayed byte by byte as it arrives), and `CONNECT host:port` opens a tunnel to the origin
(HTTPS). `origin(host, port)` says where a host lives. A host in `trickle_connect` gets its
`200 Connection established` answer (with a header, about 300 bytes) one byte per `trickle_s`
(a hostile or overloaded proxy);
the proxy notes in `OUTCOMES` (tests/hostileweb.py) how far it got, under `connect-<host>`.

Every request line received is logged in `log` (method, target).
"""

import select
import socket
import socketserver
import threading
from typing import Callable, Iterable, List, Tuple

from tests import hostileweb

__all__ = ['ForwardingProxy']

_HEAD_LIMIT = 65536


class ForwardingProxy:
    __test__ = False

    def __init__(self, origin: Callable[[str, int], Tuple[str, int]],
                 trickle_connect: Iterable[str] = (), trickle_s: float = hostileweb.TRICKLE_S):
        self.origin = origin
        self.trickle_connect = frozenset(h.lower() for h in trickle_connect)
        self.trickle_s = trickle_s
        self.log: List[Tuple[str, str]] = []
        self._lock = threading.Lock()
        self._server = None

    def start(self) -> 'ForwardingProxy':
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = socketserver.ThreadingTCPServer(('127.0.0.1', 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True,
                         name='forward-proxy').start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def requests(self) -> List[Tuple[str, str]]:
        with self._lock:
            return list(self.log)

    def _logged(self, method: str, target: str) -> None:
        with self._lock:
            self.log.append((method, target))


def _relay(client: socket.socket, upstream: socket.socket) -> None:
    """Copies bytes both ways until either side closes (or goes away)."""
    pair = {client: upstream, upstream: client}
    try:
        while True:
            ready, _, _ = select.select(list(pair), [], [], 60)
            if not ready:
                return
            for sock in ready:
                data = sock.recv(65536)
                if not data:
                    return
                pair[sock].sendall(data)
    except OSError:
        return


class _Handler(socketserver.BaseRequestHandler):
    owner: ForwardingProxy = None

    def handle(self) -> None:
        client = self.request
        head = b''
        while b'\r\n\r\n' not in head and len(head) < _HEAD_LIMIT:
            data = client.recv(4096)
            if not data:
                return
            head += data
        head, _, rest = head.partition(b'\r\n\r\n')
        lines = head.decode('latin-1').split('\r\n')
        method, target, _ = (lines[0].split(' ') + ['', ''])[:3]
        self.owner._logged(method, target)
        if method == 'CONNECT':
            self._connect(client, target, rest)
        else:
            self._forward(client, method, target, lines[1:], rest)

    def _connect(self, client, target: str, rest: bytes) -> None:
        host, _, port = target.rpartition(':')
        host = host.strip('[]').lower()
        answer = b'HTTP/1.1 200 Connection established\r\n\r\n'
        if host in self.owner.trickle_connect:      # about 300 bytes: a minute
            answer = answer[:-2] + b'X-Pad: ' + b'p' * 250 + b'\r\n\r\n'

            name, sent = f'connect-{host}', 0
            try:
                for i in range(len(answer)):
                    client.sendall(answer[i:i + 1])
                    sent += 1
                    ready, _, _ = select.select([client], [], [], self.owner.trickle_s)
                    if ready and client.recv(1, socket.MSG_PEEK) == b'':
                        break
            except OSError:
                pass
            finally:
                hostileweb.note(name, 'completed' if sent == len(answer) else
                                f'cut after {sent} of {len(answer)} trickled bytes')
            return
        try:
            upstream = socket.create_connection(self.owner.origin(host, int(port)))
        except OSError:
            client.sendall(b'HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n')
            return
        with upstream:
            client.sendall(answer)
            if rest:
                upstream.sendall(rest)
            _relay(client, upstream)

    def _forward(self, client, method: str, target: str, headers: List[str],
                 rest: bytes) -> None:
        import urllib.parse
        url = urllib.parse.urlsplit(target)
        path = (url.path or '/') + (f'?{url.query}' if url.query else '')
        kept = [h for h in headers if h.split(':', 1)[0].strip().lower() not in
                ('connection', 'proxy-connection', 'keep-alive', 'proxy-authorization')]
        request = '\r\n'.join([f'{method} {path} HTTP/1.1', *kept, 'Connection: close',
                               '', '']).encode('latin-1') + rest
        try:
            upstream = socket.create_connection(
                self.owner.origin((url.hostname or '').lower(), url.port or 80))
        except OSError:
            client.sendall(b'HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n'
                           b'Connection: close\r\n\r\n')
            return
        with upstream:
            upstream.sendall(request)
            # The status line, then `Connection: close` (this proxy opens a connection per
            # request), then the rest as it comes.
            status = b''
            try:
                while not status.endswith(b'\r\n') and len(status) < _HEAD_LIMIT:
                    ready, _, _ = select.select([upstream, client], [], [], 60)
                    if client in ready and client.recv(1, socket.MSG_PEEK) == b'':
                        return                      # the client went away
                    if upstream in ready:
                        data = upstream.recv(1)
                        if not data:
                            break
                        status += data
                if status.endswith(b'\r\n'):
                    client.sendall(status + b'Connection: close\r\n')
                elif status:
                    client.sendall(status)
                else:
                    return
            except OSError:
                return
            _relay(client, upstream)
