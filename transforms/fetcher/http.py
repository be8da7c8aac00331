"""HTTP for the fetcher: one pooled requests.Session per fetcher, no automatic redirects,
conditional GET, a content limit, and gzip/deflate decoded here with a hard cap on decoded bytes
(urllib3's decoder is bypassed so that a gzip bomb cannot exhaust memory)."""

import dataclasses
import email.utils
import time
import zlib
from typing import Dict, Optional

import requests
from requests.adapters import HTTPAdapter

__all__ = ['HttpSettings', 'HttpResponse', 'HttpClient', 'http_date']

_CHUNK = 65536


@dataclasses.dataclass(frozen=True)
class HttpSettings:
    user_agent: str
    accept: str
    accept_language: str
    timeout_s: float
    content_limit: int            # bytes kept, -1: unlimited
    hard_limit: int               # decoded bytes read at most, even when content_limit is -1
    proxy: Optional[str]          # 'http://host:port' or None
    if_modified_since: bool
    pool_size: int



@dataclasses.dataclass
class HttpResponse:
    url: str
    code: Optional[int]           # None: no response (error says why)
    headers: Dict[str, str]
    body: bytes = b''
    truncated: bool = False
    error: str = ''
    elapsed: float = 0.0          # seconds from request start to body read


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
    """GET without following redirects; thread-safe (requests' pool is)."""

    def __init__(self, settings: HttpSettings):
        self.settings = settings
        self.session = requests.Session()
        adapter = HTTPAdapter(pool_connections=settings.pool_size, pool_maxsize=settings.pool_size,
                              max_retries=0)
        self.session.mount('http://', adapter)
        self.session.mount('https://', adapter)
        self.session.headers.update({
            'User-Agent': settings.user_agent, 'Accept': settings.accept,
            'Accept-Language': settings.accept_language, 'Accept-Encoding': 'gzip, deflate'})
        self.session.trust_env = False
        self.proxies = ({'http': settings.proxy, 'https': settings.proxy}
                        if settings.proxy else {})

    def close(self) -> None:
        self.session.close()

    def get(self, url: str, *, modified_time: int = 0, etag: Optional[str] = None,
            limit: Optional[int] = None) -> HttpResponse:
        headers = {}
        if self.settings.if_modified_since and modified_time > 0:
            headers['If-Modified-Since'] = http_date(modified_time)
        if etag:
            headers['If-None-Match'] = etag
        start = time.time()
        try:
            # Sent through the adapter: Session.get would read a redirect's body itself, with
            # urllib3's unbounded decoder, even when not following redirects.
            prepared = self.session.prepare_request(requests.Request('GET', url, headers=headers))
            resp = self.session.get_adapter(url).send(
                prepared, stream=True, timeout=self.settings.timeout_s, proxies=self.proxies)
        except (requests.RequestException, ValueError) as e:
            return HttpResponse(url, None, {}, error=_describe(e), elapsed=time.time() - start)
        try:
            body, truncated = self._read(resp, self.settings.content_limit if limit is None
                                         else limit)
        except (requests.RequestException, OSError, zlib.error) as e:
            return HttpResponse(url, None, dict(resp.headers), error=_describe(e),
                                elapsed=time.time() - start)
        finally:
            resp.close()
        return HttpResponse(url, resp.status_code, dict(resp.headers), body, truncated,
                            elapsed=time.time() - start)

    def _read(self, resp, limit: int):
        cap = self.settings.hard_limit if limit < 0 else min(limit, self.settings.hard_limit)
        encoding = resp.headers.get('Content-Encoding', '').strip().lower()
        decoder = _Decoder(encoding) if encoding in ('gzip', 'x-gzip', 'deflate') else None
        if decoder and encoding == 'x-gzip':
            decoder = _Decoder('gzip')
        parts, size = [], 0
        for raw in resp.raw.stream(_CHUNK, decode_content=False):
            data = decoder.feed(raw, cap + 1 - size) if decoder else raw
            parts.append(data)
            size += len(data)
            while decoder and decoder.has_more and size <= cap:
                data = decoder.feed(b'', cap + 1 - size)
                parts.append(data)
                size += len(data)
            if size > cap:
                break
        body = b''.join(parts)
        if len(body) > cap:
            return body[:cap], True
        declared = resp.headers.get('Content-Length')
        truncated = bool(decoder is None and declared and declared.isdigit()
                         and int(declared) > len(body))
        return body, truncated


def _describe(error: Exception) -> str:
    text = str(error).replace('\n', ' ')
    return f'{type(error).__name__}: {text[:200]}'
