"""The hostile test web: one handler per way a page or a server can attack or break a crawler.

Served by the test web (tests/testweb.py) like any other site, through its proxy port, through
a forwarding proxy (tests/forwardproxy.py: the `fwd-*` hosts) or directly (the `127.0.0.1`
site). Raw handlers write their bytes themselves and note in `OUTCOMES` how far they got, so a
test can tell a request that was cut from one that ran to its end. `TlsTrickler` is an HTTPS
server on a port of its own that never finishes its TLS handshake. `sitemap_sites()` are sites
whose sitemaps try to hold a `beamcrawl sitemap` run (tests/test_sitemap.py).

HOSTS is every host name these sites use: in a test, the server must see no request for any
other host (an address the policy refuses never reaches the server).
"""

import gzip
import select
import socket
import socketserver
import threading
from typing import Dict

from tests.testweb import Page, Raw, html_page, redirect

# Where a public page may try to send the crawler (each a different spelling or class).
DENIED_TARGETS = [
    'http://169.254.169.254/latest/meta-data/', 'http://10.1.2.3/', 'http://192.168.1.1/',
    'http://127.0.0.1:9/', 'http://localhost:6379/', 'http://[::1]/', 'http://0.0.0.0/',
    'http://2130706433/', 'http://0x7f000001/', 'http://[::ffff:169.254.169.254]/',
]

OUTCOMES: Dict[str, str] = {}      # raw handler name → what happened
_changed = threading.Condition()
TRICKLE_S = 0.2                    # seconds between two trickled bytes


def note(name: str, what: str) -> None:
    with _changed:
        OUTCOMES[name] = what
        _changed.notify_all()


def outcome(name: str, timeout: float = 60.0) -> str:
    """What raw handler `name` noted, once it has (a server thread may notice a closed
    connection a moment after the client has moved on)."""
    with _changed:
        if not _changed.wait_for(lambda: name in OUTCOMES, timeout):
            raise AssertionError(f'the {name} handler noted nothing')
        return OUTCOMES[name]


def _trickle(name: str, head: bytes, body: bytes, *, trickle_head: bool):
    """Sends head (trickled or at once), then body one byte per TRICKLE_S."""
    def write(send, closed):
        slow = (head if trickle_head else b'') + body
        if not trickle_head:
            send(head)
        sent = 0
        try:
            for i in range(len(slow)):
                send(slow[i:i + 1])
                sent += 1
                if closed(TRICKLE_S):
                    break
        finally:
            note(name, 'completed' if sent == len(slow) else
                  f'cut after {sent} of {len(slow)} trickled bytes')
    return Raw(write)


def _truncated(name: str, data: bytes):
    def write(send, closed):
        send(data)
        note(name, 'sent a truncated response')
    return Raw(write)


def _never(name: str):
    def write(send, closed):
        note(name, 'cut' if closed(60) else 'completed')
    return Raw(write)


def _huge_body(name: str, size: int = 2 * 10 ** 9):
    def write(send, closed):
        send(f'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {size}\r\n\r\n'
             .encode())
        chunk, sent = b'x' * 65536, 0
        try:
            while sent < size and not closed(0):
                send(chunk)
                sent += len(chunk)
        finally:
            note(name, f'sent {sent} bytes')
    return Raw(write)


def _huge_headers(name: str):
    def write(send, closed):
        send(b'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n')
        for i in range(16000):            # about 1 MB of headers
            send(f'X-Junk-{i}: {"j" * 50}\r\n'.encode())
        send(b'Content-Length: 2\r\n\r\nhi')
        note(name, 'completed')
    return Raw(write)


def _head(length: int, content_type: str = 'text/html', close: bool = False) -> bytes:
    close_line = 'Connection: close\r\n' if close else ''
    return (f'HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n{close_line}'
            f'Content-Length: {length}\r\n\r\n').encode()


def deadline_routes(prefix: str) -> dict:
    """Slow servers that a request deadline must cut; each notes under `prefix` + its name.
    `/body-close` says `Connection: close` first, as forwarding proxies often do: then
    http.client reads the body through the response, no longer through the connection."""
    return {
        '/robots.txt': Page(status=404),
        '/headers': _trickle(prefix + 'headers', _head(5), b'hello', trickle_head=True),
        '/body': _trickle(prefix + 'body', _head(50), b'b' * 50, trickle_head=False),
        '/body-close': _trickle(prefix + 'body-close', _head(50, close=True), b'b' * 50,
                                trickle_head=False),
        '/never': _never(prefix + 'never'),
    }


def limit_routes(prefix: str) -> dict:
    """Requests that only a fetch time limit ends (with long deadlines): two pages that never
    answer, and a 60 s body after `Connection: close`."""
    return {
        '/robots.txt': Page(status=404),
        '/a': _never(prefix + 'limit-a'), '/b': _never(prefix + 'limit-b'),
        '/slow-body': _trickle(prefix + 'limit-slow-body', _head(300, close=True), b's' * 300,
                               trickle_head=False),
    }


def _page(body: str, content_type: str = 'text/html; charset=utf-8', **kw) -> Page:
    return Page(body=body.encode('utf-8'), content_type=content_type, **kw)


class TlsTrickler:
    """An HTTPS server that never finishes its TLS handshake: it reads the ClientHello, then
    answers with a handshake record that announces 16 KB and sends its bytes one per TRICKLE_S
    (`size` of them at most, a minute by default, then it closes). Each connection notes under
    `name` how far it got. The handshake happens while the client connects, before any HTTP
    request is sent."""

    __test__ = False

    def __init__(self, name: str, size: int = 300):
        self.name, self.size = name, size
        self.connections = 0
        self._server = None

    def start(self) -> 'TlsTrickler':
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                owner.connections += 1
                sock, sent = self.request, 0
                try:
                    if not sock.recv(65536):                # the ClientHello
                        return
                    sock.sendall(b'\x16\x03\x03\x40\x00')   # handshake record, 16384 bytes
                    for _ in range(owner.size):
                        sock.sendall(b'\x02')
                        sent += 1
                        ready, _, _ = select.select([sock], [], [], TRICKLE_S)
                        if ready and sock.recv(1, socket.MSG_PEEK) == b'':
                            break
                except OSError:
                    pass
                finally:
                    note(owner.name, 'completed' if sent == owner.size else
                         f'cut after {sent} of {owner.size} trickled bytes')

        self._server = socketserver.ThreadingTCPServer(('127.0.0.1', 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True,
                         name='tls-trickler').start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def port(self) -> int:
        return self._server.server_address[1]


def _gzip_bomb() -> Page:
    """64 MB of zeros in 64 KB of gzip, compressed when the sites are built: compressing it
    while a request waits took longer than the fetcher's deadline on a loaded machine."""
    bomb = gzip.compress(b'\0' * (64 << 20), compresslevel=9)
    return Page(body=bomb, headers={'Content-Encoding': 'gzip'}, content_type='text/plain')


def sites():
    no_robots = Page(status=404)
    evil = {
        '/robots.txt': no_robots,
        '/links': html_page('links', links=DENIED_TARGETS + ['http://ok.test/']),
        '/base': _page('<html><head><base href="http://10.1.2.3/"></head><body>'
                       '<a href="secret">relative to the base</a>'
                       '<a href="http://ok.test/b">ok</a></body></html>'),
        '/refresh': _page('<html><head><meta http-equiv="refresh" '
                          'content="0; url=http://192.168.1.1/"></head><body>r</body></html>'),
    }
    for i, target in enumerate(DENIED_TARGETS):
        evil[f'/redirect/{i}'] = redirect(target, 302)
    ok = {'/robots.txt': no_robots, '/': html_page('ok'), '/b': html_page('ok b')}
    robots_ssrf = {'/robots.txt': redirect('http://169.254.169.254/robots.txt'),
                   '/page': html_page('behind a hostile robots.txt')}
    slow = {
        **deadline_routes(''),
        '/truncated-body': _truncated('truncated-body', _head(1000) + b'only ten b'),
        '/truncated-headers': _truncated('truncated-headers',
                                         b'HTTP/1.1 200 OK\r\nContent-Ty'),
        '/huge-body': _huge_body('huge-body'),
        '/huge-headers': _huge_headers('huge-headers'),
        '/bomb': _gzip_bomb(),
    }
    slow_robots = {'/robots.txt': _trickle('robots', _head(40, 'text/plain'),
                                           b'User-agent: *\nDisallow: /nothing\n\n\n\n\n\n',
                                           trickle_head=False),
                   '/page': html_page('behind a slow robots.txt')}
    chain = {'/robots.txt': no_robots, '/loop1': redirect('/loop2'), '/loop2': redirect('/loop1')}
    for i in range(50):
        chain[f'/hop/{i}'] = redirect(f'/hop/{i + 1}', 302)
    chain['/hop/50'] = html_page('end of a 50-hop chain')
    robots_huge = ''.join(f'Disallow: /d{i}\n' for i in range(60000))     # about 700 KB
    junk = bytes(range(256)) * 40
    robots_cases = {
        'robots-garbage.test': Page(body=junk, content_type='text/plain'),
        'robots-500.test': Page(status=500, body=b'broken'),
        'robots-429.test': Page(status=429, body=b'slow down'),
        'robots-huge.test': Page(body=('User-agent: *\n' + robots_huge +
                                       'Disallow: /page\n').encode(), content_type='text/plain'),
    }
    deep = {
        '/robots.txt': no_robots,
        '/fonts': _page('<html><body>' + '<font>x ' * 300 +
                        '<a href="/after-fonts">after 300 fonts</a> fonts tail</body></html>'),
        '/divs': _page('<html><head><title>Deep</title></head><body>' + '<div>' * 50000 +
                       '<a href="/after-divs">after the divs</a> divs tail' + '</div>' * 50000 +
                       '</body></html>'),
        '/undefined': _page('<html><head><meta charset="undefined"></head><body>'
                            '<a href="/x">x</a> undefined label</body></html>',
                            content_type='text/html; charset=undefined'),
        '/utf16': _page('<html><head><title>Plain ASCII</title></head><body>'
                        '<a href="/y">y</a> labelled utf-16</body></html>',
                        content_type='text/html; charset=utf-16'),
        '/outlinks': html_page('many', links=[f'/o{i}' for i in range(5000)]),
        '/urls': _page('<html><body><a href="http://web.test%2f.evil.test/">slash</a>'
                       '<a href="http://münchen.test/">unicode</a>'
                       '<a href="http://xn--mnchen-3ya.test/">punycode</a>'
                       '<a href="http://a b.test/">space</a>'
                       '<a href="http://ok.test/">fine</a></body></html>'),
    }
    out = {'evil.test': evil, 'ok.test': ok, 'xn--mnchen-3ya.test': ok,
           'robots-ssrf.test': robots_ssrf,
           'trickle.test': slow, 'slow-robots.test': slow_robots, 'limit.test': limit_routes(''),
           # the same through a forwarding proxy (tests/forwardproxy.py), and without a proxy
           'fwd-trickle.test': deadline_routes('fwd-'), 'fwd-limit.test': limit_routes('fwd-'),
           '127.0.0.1': {**deadline_routes('direct-'), **limit_routes('direct-')},
           'chain.test': chain, 'deep.test': deep}
    for host, robots in robots_cases.items():
        out[host] = {'/robots.txt': robots, '/page': html_page('page'),
                     '/d5': html_page('d5')}
    return out


HOSTS = frozenset(sites())

_SITEMAP_NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
NESTED = 1000                      # the nested indexes of sm-nest.test
SLOW_SITEMAPS = 50                 # the slow sitemaps of sm-slow.test
SLOW_SITEMAP_S = 1.0               # how long each takes to answer


def _sitemap_index(*locs) -> Page:
    return Page(body=(f'<sitemapindex {_SITEMAP_NS}>' +
                      ''.join(f'<sitemap><loc>{loc}</loc></sitemap>' for loc in locs) +
                      '</sitemapindex>').encode(), content_type='application/xml')


def _urlset(*locs, delay: float = 0.0) -> Page:
    return Page(body=(f'<urlset {_SITEMAP_NS}>' +
                      ''.join(f'<url><loc>{loc}</loc></url>' for loc in locs) +
                      '</urlset>').encode(), content_type='application/xml', delay=delay)


def _names_sitemap(host: str) -> Page:
    return Page(body=f'User-agent: *\nSitemap: http://{host}/index.xml\n'.encode(),
                content_type='text/plain')


def sitemap_sites():
    """Sites whose sitemaps try to hold a `beamcrawl sitemap` run, each named by its robots.txt:

    sm-loop.test   an index that names itself in four spellings, and a sitemap of two URLs
    sm-nest.test   an index naming a sitemap (http://sm-nest.test/top) and 1000 nested indexes,
                   each naming itself and a sitemap of one URL (/p/N)
    sm-slow.test   an index naming 50 sitemaps that take SLOW_SITEMAP_S each to answer
    sm-ok.test     no robots.txt; /sitemap.xml lists two URLs
    """
    loop = {'/robots.txt': _names_sitemap('sm-loop.test'),
            '/index.xml': _sitemap_index(
                'http://sm-loop.test/index.xml', 'http://SM-LOOP.test:80/index.xml',
                'http://sm-loop.test/index.xml#again', 'http://sm-loop.test/./index.xml',
                'http://sm-loop.test/urls.xml'),
            '/urls.xml': _urlset('http://sm-loop.test/a', 'http://sm-loop.test/b')}
    nest = {'/robots.txt': _names_sitemap('sm-nest.test'),
            '/index.xml': _sitemap_index('http://sm-nest.test/urls.xml',
                                         *[f'http://sm-nest.test/n/{i}.xml'
                                           for i in range(NESTED)]),
            '/urls.xml': _urlset('http://sm-nest.test/top')}
    for i in range(NESTED):
        nest[f'/n/{i}.xml'] = _sitemap_index(f'http://sm-nest.test/n/{i}.xml',
                                             f'http://sm-nest.test/u/{i}.xml')
        nest[f'/u/{i}.xml'] = _urlset(f'http://sm-nest.test/p/{i}')
    slow = {'/robots.txt': _names_sitemap('sm-slow.test'),
            '/index.xml': _sitemap_index(*[f'http://sm-slow.test/s/{i}.xml'
                                           for i in range(SLOW_SITEMAPS)])}
    for i in range(SLOW_SITEMAPS):
        slow[f'/s/{i}.xml'] = _urlset(f'http://sm-slow.test/page/{i}', delay=SLOW_SITEMAP_S)
    ok = {'/robots.txt': Page(status=404),
          '/sitemap.xml': _urlset('http://sm-ok.test/x', 'http://sm-ok.test/y')}
    return {'sm-loop.test': loop, 'sm-nest.test': nest, 'sm-slow.test': slow, 'sm-ok.test': ok}
