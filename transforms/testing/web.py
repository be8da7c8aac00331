"""A multi-host web on loopback, served through one port as an HTTP proxy (the demo web of
`beamcrawl demo` / run_local.sh, and the test web of tests/).

Clients send absolute-form requests (`GET http://www.a.test/page HTTP/1.1`), as they do to any
HTTP proxy: with requests, `proxies={'http': web.proxy_url}`. The server picks the site by the
request's host, so any number of host names share one loopback port and no DNS is involved.

A site maps a path (with or without its query) to a `Page`: a status, headers, a body and an
optional delay; or to a callable `(request) -> Page` for dynamic pages (a page that changes, a
counter, a conditional GET). Every request is logged with its start and end time, per host, so
that tests can check politeness.
"""

import dataclasses
import select
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, List, Optional, Union

__all__ = ['Page', 'Raw', 'Request', 'LoggedRequest', 'TestWeb', 'html_page', 'redirect']


@dataclasses.dataclass
class Page:
    status: int = 200
    body: bytes = b''
    headers: Dict[str, str] = dataclasses.field(default_factory=dict)
    delay: float = 0.0          # seconds before the response is sent
    content_type: str = 'text/html; charset=utf-8'


@dataclasses.dataclass(frozen=True)
class Request:
    method: str
    host: str
    path: str                    # path with query
    headers: Dict[str, str]


@dataclasses.dataclass
class LoggedRequest:
    """A request, logged when it arrives (so that a slow answer that ends after the log was
    cleared cannot reappear in it); `end` is set just before its last bytes are sent."""
    host: str
    path: str
    method: str
    status: int
    start: float                 # time.time() when the request had arrived
    end: Optional[float] = None  # time.time() just before the response's last bytes were sent


@dataclasses.dataclass
class Raw:
    """A response a handler writes itself, byte by byte if it likes (trickling, truncated or
    never-ending responses). `write(send, closed)` gets `send(bytes)`, which raises OSError once
    the client has gone, and `closed(timeout)`, which waits up to `timeout` s for the client to
    close the connection and says whether it did."""
    write: Callable[[Callable[[bytes], None], Callable[[float], bool]], None]


Route = Union[Page, Raw, Callable[[Request], Union[Page, Raw]]]


def html_page(title: str, body_html: str = '', links: Optional[List[str]] = None,
              status: int = 200, **kw) -> Page:
    """A small HTML page with a title and links (href list)."""
    anchors = ''.join(f'<a href="{href}">link {i}</a>\n' for i, href in enumerate(links or []))
    html = (f'<!DOCTYPE html><html><head><title>{title}</title></head>'
            f'<body><h1>{title}</h1>{body_html}\n{anchors}</body></html>')
    return Page(status=status, body=html.encode('utf-8'), **kw)


def redirect(location: str, status: int = 301) -> Page:
    return Page(status=status, headers={'Location': location}, body=b'moved')


class TestWeb:
    """The server. `sites` maps a host name (lowercase, without port) to {path: Route}."""

    __test__ = False   # not a pytest test class

    def __init__(self, sites: Optional[Dict[str, Dict[str, Route]]] = None, *,
                 header_names: Optional[Callable[[str], str]] = None):
        self.sites: Dict[str, Dict[str, Route]] = {h.lower(): dict(r) for h, r in
                                                   (sites or {}).items()}
        # How header names are spelled in responses (names are case-insensitive, and servers
        # differ: str.lower, or str.capitalize as Python's http.server sends `Content-type`).
        self.header_names = header_names or (lambda name: name)
        self.log: List[LoggedRequest] = []
        self._lock = threading.Lock()
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> 'TestWeb':
        web = self

        class Handler(_Handler):
            testweb = web

        self._server = _Server(('127.0.0.1', 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name='testweb')
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> 'TestWeb':
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def proxy_url(self) -> str:
        return f'http://127.0.0.1:{self.port}'

    @property
    def proxies(self) -> Dict[str, str]:
        return {'http': self.proxy_url, 'https': self.proxy_url}

    # -- content ---------------------------------------------------------------------------
    def add(self, host: str, path: str, route: Route) -> None:
        with self._lock:
            self.sites.setdefault(host.lower(), {})[path] = route

    def requests_for(self, host: str) -> List[LoggedRequest]:
        with self._lock:
            return [r for r in self.log if r.host == host.lower()]

    def clear_log(self) -> None:
        with self._lock:
            self.log.clear()

    def _route(self, request: Request) -> Page:
        site = self.sites.get(request.host)
        if site is None:
            # What a proxy answers when it cannot resolve the host.
            return Page(status=502, body=b'unknown host', headers={'X-TestWeb': 'unknown-host'},
                        content_type='text/plain')
        route = site.get(request.path)
        if route is None:
            route = site.get(request.path.split('?', 1)[0])
        if route is None:
            return Page(status=404, body=b'not found', content_type='text/plain')
        return route(request) if callable(route) else route

    def _record(self, entry: LoggedRequest) -> None:
        with self._lock:
            self.log.append(entry)


class _Server(ThreadingHTTPServer):
    """The test web's server. Its queue of connections not yet accepted holds 128, as a web
    server's or a proxy's does, rather than socketserver's 5: the fetcher's threads open their
    connections to the one proxy port all at once, and the kernel drops a connection attempt
    beyond the queue, which the client then retries after 1 s (TCP's first retransmission): a
    host of the test web would start a second or more late (docs/performance.md)."""
    request_queue_size = 128


class _Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    testweb: TestWeb = None

    def log_message(self, fmt, *args):  # keep test output clean
        pass

    def _serve(self, send_body: bool) -> None:
        start = time.time()
        target = urllib.parse.urlsplit(self.path)
        if target.scheme and target.netloc:
            host = target.hostname or ''
            path = target.path or '/'
            if target.query:
                path += '?' + target.query
        else:
            host = (self.headers.get('Host') or '').split(':', 1)[0]
            path = self.path
        request = Request(self.command, host.lower(), path, dict(self.headers.items()))
        page = self.testweb._route(request)
        if isinstance(page, Raw):
            self._raw(request, path, page, start)
            return
        entry = LoggedRequest(request.host, path, self.command, page.status, start)
        self.testweb._record(entry)
        if page.delay:
            time.sleep(page.delay)
        headers = {'Content-Type': page.content_type, **page.headers}
        body = b'' if page.status in (204, 304) else page.body   # these have no body (RFC 9110)
        if page.status not in (204, 304):
            headers['Content-Length'] = str(len(body))
        head = [f'HTTP/1.1 {page.status} {self.responses.get(page.status, ("",))[0]}']
        spell = self.testweb.header_names
        head += [f'{spell(name)}: {value}' for name, value in headers.items()]
        data = ('\r\n'.join(head) + '\r\n\r\n').encode('latin-1')
        if send_body:
            data += body
        # The end is set before the one write that completes the response: a client that has
        # the response finds it, and a gap measured here (end of one response to the start of
        # the next request) is never shorter than the gap the client waited.
        entry.end = time.time()
        self.wfile.write(data)
        self.wfile.flush()

    def _raw(self, request: Request, path: str, raw: Raw, start: float) -> None:
        self.testweb._record(LoggedRequest(request.host, path, self.command, 0, start,
                                           time.time()))
        self.close_connection = True

        def send(data: bytes) -> None:
            self.wfile.write(data)
            self.wfile.flush()

        def closed(timeout: float) -> bool:
            ready, _, _ = select.select([self.connection], [], [], timeout)
            if not ready:
                return False
            try:
                return self.connection.recv(1, socket.MSG_PEEK) == b''
            except OSError:
                return True

        try:
            raw.write(send, closed)
        except OSError:
            pass                   # the client went away: what the hostile cases expect

    def do_GET(self):
        self._serve(send_body=True)

    def do_HEAD(self):
        self._serve(send_body=False)
