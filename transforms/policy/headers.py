"""HTTP header names, which are case-insensitive (RFC 9110, section 5.1).

Servers spell them as they like: Python's `http.server` sends `Content-type`, many servers send
all lowercase (`etag`, `x-robots-tag`). Everything beamcrawl reads from a response or from a
stored Content record goes through this module:

* `Headers` is the case-insensitive mapping the fetcher hands on; its names are the canonical
  spellings (`canonical('content-type') == 'Content-Type'`), as Nutch's SpellCheckedMetadata
  does, so a stored record reads the same whatever the server sent.
* `header(mapping, name)` looks a name up case-insensitively in any mapping, such as the plain
  dict of a Content record written before names were made canonical.

The WARC records keep the names exactly as they went over the wire (docs/warc.md).
"""

from typing import Iterable, Iterator, Mapping, Optional, Tuple, Union

__all__ = ['Headers', 'canonical', 'header']

# Names whose usual spelling is not plain Title-Case of their dash-separated words.
_SPECIAL = {n.lower(): n for n in (
    'ETag', 'WWW-Authenticate', 'Content-MD5', 'X-XSS-Protection', 'DNT', 'TE', 'P3P',
    'X-UA-Compatible', 'Content-ID', 'SourceMap', 'X-DNS-Prefetch-Control')}


def canonical(name: str) -> str:
    """The usual spelling of a header name: `content-TYPE` -> `Content-Type`, `etag` -> `ETag`."""
    key = name.strip().lower()
    special = _SPECIAL.get(key)
    if special is not None:
        return special
    return '-'.join(word[:1].upper() + word[1:] for word in key.split('-'))


class Headers(Mapping):
    """Header name -> value, looked up case-insensitively, iterated under canonical names.

    A name that occurs more than once keeps its values joined by ', ' (RFC 9110, 5.3), which is
    how `requests` and urllib3 already hand repeated headers on.
    """

    __slots__ = ('_items',)

    def __init__(self, items: Union[Mapping[str, str], Iterable[Tuple[str, str]], None] = None):
        self._items = {}            # lowercase name -> (canonical name, value)
        pairs = items.items() if isinstance(items, Mapping) else (items or ())
        for name, value in pairs:
            key = name.strip().lower()
            if key in self._items:
                self._items[key] = (self._items[key][0], f'{self._items[key][1]}, {value}')
            else:
                self._items[key] = (canonical(name), value)

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()][1]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return (canonical_name for canonical_name, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f'Headers({dict(self.items())!r})'

    def __reduce__(self):           # picklable (crosses processes with the fetch outcome)
        return (Headers, (list(self.items()),))


def header(headers: Optional[Mapping[str, str]], name: str, default: str = '') -> str:
    """The value of header `name` in `headers` (any mapping), whatever the case of its name."""
    if not headers:
        return default
    if isinstance(headers, Headers):
        return headers.get(name, default)
    value = headers.get(name)
    if value is not None:
        return value
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return default
