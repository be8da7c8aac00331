"""Content signatures (Nutch's MD5Signature, TextMD5Signature, TextProfileSignature). Pure, no Beam.

`signature(kind, content, text, url)` with kind one of Nutch's class names or short names:
MD5Signature ('md5'), TextMD5Signature ('text-md5'), TextProfileSignature ('text-profile').
"""

import hashlib
import math
import re
import unicodedata
from typing import Dict

__all__ = ['md5_signature', 'text_md5_signature', 'text_profile_signature', 'signature',
           'SIGNATURE_KINDS', 'signature_kind']

SIGNATURE_KINDS = {
    'org.apache.nutch.crawl.MD5Signature': 'md5', 'MD5Signature': 'md5', 'md5': 'md5',
    'org.apache.nutch.crawl.TextMD5Signature': 'text-md5', 'TextMD5Signature': 'text-md5',
    'text-md5': 'text-md5',
    'org.apache.nutch.crawl.TextProfileSignature': 'text-profile',
    'TextProfileSignature': 'text-profile', 'text-profile': 'text-profile',
}

_WORD = re.compile(r'[^\W_]+')
_JAVA_LETTER_OR_DIGIT = frozenset(('Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'Nd'))


def signature_kind(name: str) -> str:
    """The short name of a signature class name; ValueError when unknown."""
    try:
        return SIGNATURE_KINDS[name]
    except KeyError:
        raise ValueError(f'db.signature.class={name}: expected one of '
                         f'{sorted(set(SIGNATURE_KINDS))}') from None


def md5_signature(content: bytes, url: str) -> bytes:
    """MD5 of the content bytes; of the URL's UTF-8 bytes when there is no content."""
    return hashlib.md5(content if content else url.encode('utf-8')).digest()


def text_md5_signature(text: str, content: bytes, url: str) -> bytes:
    if not text:
        return md5_signature(content, url)
    return hashlib.md5(text.encode('utf-8')).digest()


def _tokens(text: str):
    """Maximal runs of Java letter-or-digit characters, lowercased."""
    for match in _WORD.finditer(text):
        token = match.group(0)
        if token.isascii():
            yield token.lower()
            continue
        run = []
        for ch in token:       # \\w also admits No/Nl/Mn characters, which Java does not
            if unicodedata.category(ch) in _JAVA_LETTER_OR_DIGIT:
                run.append(ch)
            elif run:
                yield ''.join(run).lower()
                run = []
        if run:
            yield ''.join(run).lower()


def text_profile_signature(text: str, content: bytes, url: str, *, min_token_len: int = 2,
                           quant_rate: float = 0.01) -> bytes:
    """Nutch's TextProfileSignature: a near-duplicate tolerant profile of frequent tokens."""
    if not text:
        return md5_signature(content, url)
    counts: Dict[str, int] = {}
    for token in _tokens(text):
        if len(token) > min_token_len:
            counts[token] = counts.get(token, 0) + 1
    max_freq = max(counts.values(), default=0)
    quant = int(math.floor(max_freq * quant_rate + 0.5))        # Java Math.round
    if quant < 2:
        quant = 2 if max_freq > 1 else 1
    profile = []
    for token, count in counts.items():
        count = count // quant * quant
        if count >= quant:
            profile.append((token, count))
    # count descending, then token ascending in Java's (UTF-16 code unit) order
    profile.sort(key=lambda tc: (-tc[1], tc[0].encode('utf-16-be')))
    return hashlib.md5('\n'.join(f'{t} {c}' for t, c in profile).encode('utf-8')).digest()


def signature(kind: str, *, content: bytes, text: str, url: str, min_token_len: int = 2,
              quant_rate: float = 0.01) -> bytes:
    """The signature of a parsed document by kind ('md5', 'text-md5', 'text-profile')."""
    if kind == 'md5':
        return md5_signature(content, url)
    if kind == 'text-md5':
        return text_md5_signature(text, content, url)
    return text_profile_signature(text, content, url, min_token_len=min_token_len,
                                  quant_rate=quant_rate)
