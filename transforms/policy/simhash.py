"""Near-duplicate fingerprints: a 64-bit SimHash of a text's word shingles, and the groups of
fingerprints within a Hamming distance, found through bands rather than all pairs. Pure, no
Beam.

* `simhash(text)`: Charikar's SimHash over the text's word 3-shingles (lower-cased words of
  letters and digits, punctuation taken out, each shingle weighted by how often it occurs, hashed to 64 bits from
  the CRC-32s of its words, so the value is the same in every process and on every machine). Two texts that differ
  in a few words differ in a few bits; unrelated texts in about 32. A text of fewer words than
  a shingle has one shingle of all its words; an empty text has no fingerprint (None).
* `bands(fingerprint, distance)`: the fingerprint cut into `distance + 1` bands. Two
  fingerprints at most `distance` bits apart agree on at least one band whole (pigeonhole: each
  differing bit spoils one band at most), so candidates are the pages that share a band value,
  never all pairs.
* `near_groups(entries, distance)`: (key, fingerprint) pairs → the groups (sets of keys, in key
  order) of two or more pages joined by pairs at most `distance` bits apart, transitively. The
  dedup stage (transforms/dedup.py) finds the candidate pairs per band in parallel and joins the
  pairs with `groups_of_pairs`; this function does all of it in one process and is the tests'
  oracle.
"""

import string
import zlib
from typing import Dict, Hashable, Iterable, List, Optional, Sequence, Tuple

__all__ = ['SIMHASH_KEY', 'BITS', 'SHINGLE', 'MIN_WORDS', 'simhash', 'hamming', 'bands',
           'band_widths', 'near_pairs', 'groups_of_pairs', 'near_groups', 'to_hex', 'from_hex']

# The metadata key of a page's fingerprint (16 hex digits): in its parse_data, in the crawl_parse
# signature record, and so in its crawldb record (policy/updatedb.py).
SIMHASH_KEY = '_simhash_'
BITS = 64
# Pages with fewer words than this get no fingerprint: with so little text, pages that share a
# template are nearer than their texts are different (parse applies it).
MIN_WORDS = 50
SHINGLE = 3                        # words per shingle
# Words are what is left between spaces once punctuation is a space too: five times faster than
# a regex over the text, and the same words for text in any script but for rare symbols.
_PUNCTUATION = str.maketrans({c: ' ' for c in string.punctuation + '“”‘’‚„–—…«»‹›¡¿·′″•'
                              '。，、；：？！「」『』（）【】《》〈〉・'})




def _mix(values):
    """SplitMix64's finalizer over an array of uint64: every input bit moves every output bit."""
    import numpy as np
    values = values ^ (values >> np.uint64(30))
    values = values * np.uint64(0xBF58476D1CE4E5B9)
    values = values ^ (values >> np.uint64(27))
    values = values * np.uint64(0x94D049BB133111EB)
    return values ^ (values >> np.uint64(31))


def simhash(text: str, shingle: int = SHINGLE, min_words: int = 1) -> Optional[int]:
    """The 64-bit SimHash of `text`'s word shingles; None for a text of fewer than
    `min_words` words (at least one).

    Each distinct word is hashed once (its CRC-32, spread to 64 bits by SplitMix64), a
    shingle's hash combines its words' hashes and is mixed again, and the 64 votes are counted
    over all shingles at once with numpy (which comes with Beam): about 1.2 ms for 3,000 words,
    where hashing each shingle and voting bit by bit in Python took 18 ms."""
    import numpy as np
    words = (text or '').lower().translate(_PUNCTUATION).split()
    if not words or len(words) < min_words:
        return None
    ids: Dict[str, int] = {}
    codes = [ids.setdefault(word, len(ids)) for word in words]
    crc32 = zlib.crc32
    unique = _mix(np.array([crc32(word.encode('utf-8')) for word in ids], dtype=np.uint64))
    hashes = unique[np.array(codes)]
    n = min(shingle, len(words))
    count = len(words) - n + 1
    combined = np.zeros(count, dtype=np.uint64)
    for i in range(n):
        combined = combined * np.uint64(0x100000001B3) ^ hashes[i:i + count]
    combined = _mix(combined)
    # each hash's 64 bits, least significant first (the array's bytes are little-endian)
    ones = np.unpackbits(combined.astype('<u8').view(np.uint8),
                         bitorder='little').reshape(count, BITS).sum(axis=0)
    value = 0
    for bit in range(BITS):
        if 2 * int(ones[bit]) > count:
            value |= 1 << bit
    return value


def hamming(a: int, b: int) -> int:
    """The number of bits in which two fingerprints differ."""
    return (a ^ b).bit_count()


def band_widths(distance: int) -> List[int]:
    """The widths of the `distance + 1` bands that a fingerprint is cut into (the first ones a
    bit wider when 64 does not divide evenly). ValueError for a distance outside 0..15: with
    more bands than that, each is too narrow to keep the candidate groups small."""
    if not 0 <= distance <= 15:
        raise ValueError(f'near-duplicate distance {distance}: expected 0 to 15 bits')
    count = distance + 1
    return [BITS // count + (1 if i < BITS % count else 0) for i in range(count)]


def bands(fingerprint: int, distance: int) -> List[Tuple[int, int]]:
    """(band number, the band's bits) for each band of the fingerprint."""
    out, shift = [], 0
    for i, width in enumerate(band_widths(distance)):
        out.append((i, (fingerprint >> shift) & ((1 << width) - 1)))
        shift += width
    return out


def near_pairs(candidates: Sequence[Tuple[Hashable, int]], distance: int
               ) -> List[Tuple[Hashable, Hashable]]:
    """The pairs (smaller key, larger key) of one band's candidates (pages sharing a band value)
    that are at most `distance` bits apart."""
    ordered = sorted(candidates, key=lambda entry: entry[0])
    pairs = []
    for i, (key_a, a) in enumerate(ordered):
        for key_b, b in ordered[i + 1:]:
            if key_a != key_b and hamming(a, b) <= distance:
                pairs.append((key_a, key_b))
    return pairs


def groups_of_pairs(pairs: Iterable[Tuple[Hashable, Hashable]]) -> List[List[Hashable]]:
    """The connected groups of keys that the pairs join, each in key order, groups in the order
    of their first keys."""
    parent: Dict[Hashable, Hashable] = {}

    def root(key):
        parent.setdefault(key, key)
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            if rb < ra:
                ra, rb = rb, ra
            parent[rb] = ra
    groups: Dict[Hashable, List[Hashable]] = {}
    for key in parent:
        groups.setdefault(root(key), []).append(key)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])


def near_groups(entries: Iterable[Tuple[Hashable, int]], distance: int) -> List[List[Hashable]]:
    """The groups of two or more keys whose fingerprints are joined by pairs at most `distance`
    bits apart (all in one process: the oracle of the dedup stage's parallel grouping)."""
    buckets: Dict[Tuple[int, int], List[Tuple[Hashable, int]]] = {}
    for key, fingerprint in entries:
        for band in bands(fingerprint, distance):
            buckets.setdefault(band, []).append((key, fingerprint))
    pairs = set()
    for candidates in buckets.values():
        if len(candidates) > 1:
            pairs.update(near_pairs(candidates, distance))
    return groups_of_pairs(sorted(pairs))


def to_hex(fingerprint: int) -> str:
    """A fingerprint as the 16 hex digits kept in parse metadata."""
    return f'{fingerprint:016x}'


def from_hex(text: str) -> Optional[int]:
    """A fingerprint from its 16 hex digits; None when `text` is not one."""
    if len(text or '') != 16:
        return None
    try:
        return int(text, 16)
    except ValueError:
        return None
