"""Which character encoding a fetched document is in (docs/nutch-differences.md D25). Pure.

Candidates, in order: a byte-order mark, the HTTP header's charset, a `<meta>` charset in the
first 8 KiB, UTF-8; the first that decodes the bytes without error wins, else windows-1252
(Nutch's default). The page's word is not taken blindly:

* a label Python knows but that is no text encoding (`undefined`, `base64`, `rot13`...) is
  ignored, like an unknown label;
* a UTF-16 or UTF-32 label without a BOM is believed only if the bytes look like it (NUL bytes
  in the first KiB, as ASCII markup has in those encodings): an ASCII page labelled utf-16
  would otherwise decode "cleanly" into garbage.

`decode_document` returns the text, the encoding used and where it came from, which parse
records in the parse metadata (`charset`, `charset.source`).
"""

import codecs
import re
from typing import Optional, Tuple

__all__ = ['decode_document']

_META_CHARSET = re.compile(rb'<meta[^>]+charset\s*=\s*["\']?\s*([A-Za-z0-9_.:-]+)', re.I)
_BOMS = ((codecs.BOM_UTF8, 'utf-8'), (codecs.BOM_UTF32_LE, 'utf-32-le'),
         (codecs.BOM_UTF32_BE, 'utf-32-be'), (codecs.BOM_UTF16_LE, 'utf-16-le'),
         (codecs.BOM_UTF16_BE, 'utf-16-be'))
_WIDE = ('utf-16', 'utf-32')


def _codec(label: Optional[str]) -> Optional[str]:
    """The Python codec of a charset label, or None when it is unknown or no text encoding."""
    if not label:
        return None
    try:
        info = codecs.lookup(label.strip().strip('"\'').lower())
    except LookupError:
        return None
    if not getattr(info, '_is_text_encoding', True) or info.name == 'undefined':
        return None
    # WHATWG: documents labelled latin-1 / ascii are decoded as windows-1252.
    return 'cp1252' if info.name in ('latin-1', 'iso8859-1', 'ascii') else info.name


def _plausible(name: str, body: bytes) -> bool:
    if not name.startswith(_WIDE):
        return True
    return b'\x00' in body[:1024]


def decode_document(body: bytes, header_charset: Optional[str]) -> Tuple[str, str, str]:
    """(text, encoding, source) with source one of bom, header, meta, default (UTF-8) or
    fallback (windows-1252, with replacement characters where bytes do not decode)."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            try:
                return body[len(bom):].decode(name), name, 'bom'
            except UnicodeError:
                break
    candidates = [(_codec(header_charset), 'header')]
    m = _META_CHARSET.search(body[:8192])
    candidates.append((_codec(m.group(1).decode('ascii', 'replace')) if m else None, 'meta'))
    candidates.append(('utf-8', 'default'))
    for name, source in candidates:
        if name is None or not _plausible(name, body):
            continue
        try:
            return body.decode(name), name, source
        except (UnicodeError, LookupError):
            continue
    return body.decode('cp1252', 'replace'), 'cp1252', 'fallback'
