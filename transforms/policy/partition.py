"""Which queue and which part a URL belongs to. Pure, no Beam.

* `queue_key(host, mode, ...)`: the politeness queue of a host (Nutch's fetcher.queue.mode) and,
  with the same modes, the fetch-list part key of generate (partition.url.mode): the host, its
  registered domain, or its IP address. No scheme and no port, as Nutch.
* `partition(key, n)`: a stable part index for a key (CRC-32, not Python's salted hash()).
* `scatter_key(url)`: Nutch's URL-hash order inside a fetch-list part, which interleaves hosts.
"""

import zlib
from typing import Callable, Optional

from beamcrawl.transforms.policy.urlparts import scheme_host

__all__ = ['QUEUE_MODES', 'queue_key', 'partition', 'scatter_key']

QUEUE_MODES = ('byHost', 'byDomain', 'byIP')


def queue_key(host: str, mode: str, *, domain_of: Callable[[str], str],
              resolve: Callable[[str], str]) -> Optional[str]:
    """The queue id of `host` under `mode`. `domain_of` gives a host's registered domain and
    `resolve` its IP address ('' when it does not resolve); None: the host has no IP (byIP)."""
    if mode == 'byDomain':
        return domain_of(host) or host
    if mode == 'byIP':
        return resolve(host) or None
    if mode != 'byHost':
        raise ValueError(f'queue mode {mode!r}: expected one of {QUEUE_MODES}')
    return host


def url_queue(url: str, mode: str, *, domain_of: Callable[[str], str],
              resolve: Callable[[str], str]) -> Optional[str]:
    """The queue id of a URL (queue_key of its host); None when it has no host or, in byIP
    mode, its host has no address."""
    host = scheme_host(url)[1]
    return queue_key(host, mode, domain_of=domain_of, resolve=resolve) if host else None


def partition(key: str, num_parts: int) -> int:
    """Part index of a host/domain/IP key."""
    return zlib.crc32(key.encode('utf-8')) % num_parts


def scatter_key(url: str) -> int:
    """h = 31*h + b over the URL bytes, last byte first, as a 32-bit signed int (Nutch's order
    inside a fetch list). Sorting by it interleaves hosts."""
    h = 0
    for b in reversed(url.encode('utf-8')):
        h = (31 * h + (b - 256 if b > 127 else b)) & 0xffffffff
    return h - (1 << 32) if h & 0x80000000 else h
