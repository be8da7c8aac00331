"""HTTP for the fetcher: one pool of connections per fetcher (urllib3, the transport under
`requests`, used directly without its layers: docs/performance.md), no automatic
redirects, conditional GET, a content limit, and gzip/deflate decoded here with a hard cap on
decoded bytes (urllib3's decoder is bypassed so that a gzip bomb cannot exhaust memory). Every
request runs under the guards of guard.py: a deadline for the whole request, and (without a
proxy) the address policy checked on the address actually connected to. With `keep_exchange`, a
response also carries the exchange as it went over the wire (for WARC records:
transforms/storage/warc.py)."""

import dataclasses
import email.utils
import time
import zlib
from typing import Optional

import certifi
import urllib3

from beamcrawl.transforms.fetcher.guard import DeniedAddress, Watchdog, guarded_pool_classes
from beamcrawl.transforms.policy.addresses import AddressPolicy
from beamcrawl.transforms.policy.headers import Headers
from beamcrawl.transforms.storage.warc import RawExchange

__all__ = ['HttpSettings', 'HttpResponse', 'HttpClient', 'http_date']

_CHUNK = 65536


@dataclasses.dataclass(frozen=True)
class HttpSettings:
    user_agent: str
    accept: str
    accept_language: str
    timeout_s: float              # http.timeout: connect, and each read of the socket
    deadline_s: float             # http.request.deadline: a whole request, all included
    content_limit: int            # bytes kept, -1: unlimited
    hard_limit: int               # decoded bytes read at most, even when content_limit is -1
    proxy: Optional[str]          # 'http://host:port' or None
    if_modified_since: bool
    pool_size: int
    address: Optional[AddressPolicy] = None   # checked at connect time (not through a proxy)
    keep_exchange: bool = False   # keep the raw exchange (fetcher.store.warc)


@dataclasses.dataclass
class HttpResponse:
    url: str
    code: Optional[int]           # None: no response (error says why)
    headers: Headers              # case-insensitive names (policy/headers.py)
    body: bytes = b''
    truncated: bool = False
    error: str = ''
    elapsed: float = 0.0          # seconds from request start to body read
    denied: bool = False          # refused by the address policy: nothing was sent
    cut: bool = False             # stopped at its deadline (or by expire_all)
    exchange: Optional[RawExchange] = None   # with keep_exchange, when a response came


def http_date(ms: int) -> str:
    return email.utils.formatdate(ms / 1000.0, usegmt=True)


class _Decoder:
    """Incremental gzip/deflate decoding that never produces more than `room` bytes at once."""

    def __init__(self, encoding: str):
        self.encoding = encoding
        self._d = zlib.decompressobj(31 if encoding == 'gzip' else 15)
        self._raw_deflate_tried = encoding != 'deflate'
        self._tail = b''

    def feed(self, data: bytes, room: int) -> bytes:
        data = self._tail + data
        try:
            out = self._d.decompress(data, room)
        except zlib.error:
            if self._raw_deflate_tried:
                raise
            self._raw_deflate_tried = True          # servers send raw deflate too
            self._d = zlib.decompressobj(-15)
            out = self._d.decompress(data, room)
        self._tail = self._d.unconsumed_tail
        return out

    @property
    def has_more(self) -> bool:
        return bool(self._tail)


class HttpClient:
    """GET without following redirects; thread-safe (urllib3's pools are).

    The request on the wire is the one `requests` sends (its default headers, an absolute URL
    to a forwarding proxy, CONNECT for https through one, TLS verified against certifi's
    bundle); only its Python layers are left out: a session merging settings and cookies that
    the fetcher never has, and a Response object around urllib3's."""

    def __init__(self, settings: HttpSettings):
        self.settings = settings
        self.watchdog = Watchdog()
        # Through a proxy the peer is the proxy; names are the proxy's to resolve.
        peer_policy = None if settings.proxy else settings.address
        pools = dict(num_pools=settings.pool_size, maxsize=settings.pool_size,
                     cert_reqs='CERT_REQUIRED', ca_certs=certifi.where())
        self.manager = (urllib3.ProxyManager(settings.proxy, **pools) if settings.proxy
                        else urllib3.PoolManager(**pools))
        self.manager.pool_classes_by_scheme = guarded_pool_classes(self.watchdog, peer_policy)
        self.headers = {'User-Agent': settings.user_agent, 'Accept-Encoding': 'gzip, deflate',
                        'Accept': settings.accept, 'Connection': 'keep-alive',
                        'Accept-Language': settings.accept_language}
        connect = min(settings.timeout_s, settings.deadline_s)
        self.timeout = urllib3.Timeout(connect=connect, read=settings.timeout_s)

    def close(self) -> None:
        self.watchdog.close()
        self.manager.clear()

    def cut_all(self) -> None:
        """Ends every request in flight now, and every later one as it starts (they fail as
        cut): the fetch is over."""
        self.watchdog.expire_all()

    def get(self, url: str, *, modified_time: int = 0, etag: Optional[str] = None,
            limit: Optional[int] = None) -> HttpResponse:
        headers = self.headers
        if (self.settings.if_modified_since and modified_time > 0) or etag:
            headers = dict(headers)
            if self.settings.if_modified_since and modified_time > 0:
                headers['If-Modified-Since'] = http_date(modified_time)
            if etag:
                headers['If-None-Match'] = etag
        start = time.time()
        deadline = start + self.settings.deadline_s
        self.watchdog.begin(deadline)
        resp = None
        complete = False
        try:
            # urllib3's own reading of the URL: the host IDNA-encoded, characters a request
            # line cannot carry percent-encoded (as requests sent it).
            target = urllib3.util.parse_url(url)
            if target.scheme not in ('http', 'https') or not target.host:
                raise ValueError(f'not an http(s) URL: {url[:200]}')
            path = target.request_uri
            pool = self.manager.connection_from_host(target.host, target.port, target.scheme)
            if self.settings.proxy and target.scheme == 'http':
                # a forwarding proxy gets the absolute URL (without credentials or fragment)
                wire = urllib3.util.Url(target.scheme, host=target.host, port=target.port,
                                        path=target.path, query=target.query).url
            else:
                wire = path               # a server, or a proxy's CONNECT tunnel: the path
            resp = pool.urlopen('GET', wire, headers=headers, redirect=False,
                                assert_same_host=False, preload_content=False,
                                decode_content=False, retries=False, timeout=self.timeout)
            original = getattr(resp, '_original_response', None)
            if original is not None:     # a header block cut short is a failure, not a 200
                urllib3.util.response.assert_header_parsing(original.msg)
            raw = [] if self.settings.keep_exchange else None
            # the connection goes back to the pool once the body is read: its peer first
            peer = None if self.settings.proxy else \
                getattr(getattr(resp, '_connection', None), 'peer_address', None)
            body, truncated = self._read(resp, self.settings.content_limit if limit is None
                                         else limit, deadline, raw)
            complete = not truncated
            result = HttpResponse(url, resp.status, Headers(resp.headers), body, truncated)
            if raw is not None:
                result.exchange = self._exchange(url, target.netloc, path, headers, resp,
                                                 b''.join(raw), start, truncated, peer)
        except DeniedAddress as e:
            result = HttpResponse(url, None, Headers(), error=str(e), denied=True)
        except (urllib3.exceptions.HTTPError, OSError, ValueError, zlib.error,
                _DeadlinePassed) as e:
            result = HttpResponse(url, None, Headers(resp.headers if resp is not None else None),
                                  error=_describe(e))
        finally:
            if resp is not None:
                if not complete:      # a body not read to its end: the connection is dropped
                    resp.close()
                resp.release_conn()
            cut = self.watchdog.end()
        if cut:      # a body may even look complete to urllib3 once its socket was shut down
            result = HttpResponse(url, None, result.headers, cut=True, error=(
                f'request cut at its deadline (http.request.deadline '
                f'{self.settings.deadline_s:g} s) or at the fetch time limit'))
        result.elapsed = time.time() - start
        return result

    @staticmethod
    def _exchange(url: str, netloc: str, path: str, headers: dict, resp, body: bytes,
                  start: float, truncated: bool, peer: Optional[str]) -> RawExchange:
        lines = [f'GET {path} HTTP/1.1', f'Host: {netloc}']
        lines += [f'{name}: {value}' for name, value in headers.items()]
        request = ('\r\n'.join(lines) + '\r\n\r\n').encode('iso-8859-1', 'replace')
        original = getattr(resp, '_original_response', None)
        if original is not None:
            version = 'HTTP/1.0' if original.version == 10 else 'HTTP/1.1'
            status = f'{version} {original.status} {original.reason}'.rstrip()
            headers = list(original.msg.items())
        else:
            status = f'HTTP/1.1 {resp.status} {resp.reason or ""}'.rstrip()
            headers = list(resp.headers.items())
        return RawExchange(url, request, status, headers, body, int(start * 1000),
                           truncated, peer)

    def _read(self, resp, limit: int, deadline: float, raw: Optional[list] = None):
        """(body, truncated by the content limit). A body that ends before its Content-Length
        or after the deadline raises (a failure, never a short success). The bytes received,
        before content decoding, are appended to `raw` when given."""
        cap = self.settings.hard_limit if limit < 0 else min(limit, self.settings.hard_limit)
        encoding = resp.headers.get('Content-Encoding', '').strip().lower()
        decoder = _Decoder(encoding) if encoding in ('gzip', 'x-gzip', 'deflate') else None
        if decoder and encoding == 'x-gzip':
            decoder = _Decoder('gzip')
        parts, size = [], 0
        for received in resp.stream(_CHUNK, decode_content=False):
            if raw is not None:
                raw.append(received)
            data = decoder.feed(received, cap + 1 - size) if decoder else received
            parts.append(data)
            size += len(data)
            while decoder and decoder.has_more and size <= cap:
                data = decoder.feed(b'', cap + 1 - size)
                parts.append(data)
                size += len(data)
            if size > cap:
                break
            if time.time() > deadline:
                raise _DeadlinePassed(f'deadline ({self.settings.deadline_s:g} s) passed while '
                                      f'reading the body')
        body = b''.join(parts)
        if len(body) > cap:
            return body[:cap], True
        return body, False


class _DeadlinePassed(Exception):
    pass


def _describe(error: Exception) -> str:
    text = str(error).replace('\n', ' ')
    return f'{type(error).__name__}: {text[:200]}'
