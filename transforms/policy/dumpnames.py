"""Where `dump` writes a page's content: a relative path made from its (hostile) URL and
content type, that can never leave the output directory. Pure."""

import hashlib
import mimetypes
import re
import urllib.parse

__all__ = ['dump_path', 'mime_of']

_SAFE = re.compile(r'[^A-Za-z0-9._-]+')
_MIME = re.compile(r'[a-z0-9][a-z0-9.+-]{0,62}/[a-z0-9][a-z0-9.+-]{0,62}')
_NAME_MAX = 80                    # characters kept of a URL's last path segment


def mime_of(content_type: str) -> str:
    """The `type/subtype` of a Content-Type, lowercased; `unknown/unknown` when it is not
    one."""
    value = (content_type or '').split(';', 1)[0].strip().lower()
    return value if _MIME.fullmatch(value) else 'unknown/unknown'


def _safe(text: str, limit: int) -> str:
    text = _SAFE.sub('_', text)[:limit].strip('._')
    return text


def dump_path(url: str, content_type: str, flat: bool = False) -> str:
    """`type/subtype/host/name` (or `name` when flat): name is the URL's last path segment
    (`index` for a directory), made safe, then a hash of the whole URL (so that two URLs never
    share a file), then the type's usual extension."""
    mime = mime_of(content_type)
    parts = urllib.parse.urlsplit(url) if '://' in url else None
    host = _safe(parts.hostname or '', 100) if parts is not None else ''
    segment = urllib.parse.unquote(parts.path.rsplit('/', 1)[-1]) if parts is not None else ''
    stem = _safe(segment.rsplit('.', 1)[0] if '.' in segment else segment, _NAME_MAX) or 'index'
    digest = hashlib.md5(url.encode('utf-8', 'surrogatepass')).hexdigest()[:12]
    extension = mimetypes.guess_extension(mime, strict=False) or '.bin'
    name = f'{stem}-{digest}{extension}'
    if flat:
        return name
    return '/'.join((*mime.split('/'), host or '_', name))
