"""SimHash fingerprints and near-duplicate groups through bands (policy/simhash.py)."""

import itertools
import random

import pytest

from beamcrawl.transforms.policy.simhash import (band_widths, bands, from_hex, groups_of_pairs,
                                                 hamming, near_groups, near_pairs, simhash,
                                                 to_hex)

_VOCAB = [f'word{i}' for i in range(3000)]


def _article(seed: int, words: int = 300) -> str:
    r = random.Random(seed)
    return ' '.join(r.choice(_VOCAB) for _ in range(words))


def test_the_fingerprint_is_fixed_for_a_text():
    """The same value in every process and on every machine (CRC-32 and SplitMix64, not Python's hash)."""
    assert simhash("The quick brown fox jumps over the lazy dog") == 0xcb2327eb68523232
    assert simhash("the QUICK brown fox, jumps over the lazy dog!") == 0xcb2327eb68523232


@pytest.mark.parametrize('text', ['', '   ', '!!! ... ---', None])
def test_a_text_without_words_has_no_fingerprint(text):
    assert simhash(text) is None


def test_short_texts_have_one_shingle_of_all_their_words():
    assert simhash('hello') == simhash('HELLO!')
    assert simhash('hello world') != simhash('world hello')


@pytest.mark.parametrize('change', [
    lambda w, r: w[:150] + ['changed'] + w[151:],                  # one word of 300
    lambda w, r: ['Posted', 'by', 'admin'] + w,                     # a byline added
    lambda w, r: w[:100] + w[101:],                                 # one word removed
])
def test_small_edits_move_few_bits(change):
    """Over 60 texts of 300 words: most within 3 bits, none far (unrelated texts are about 32
    apart)."""
    distances = sorted(hamming(simhash(' '.join(words)), simhash(' '.join(change(words, r))))
                       for r in (random.Random(seed) for seed in range(60))
                       for words in [[r.choice(_VOCAB) for _ in range(300)]])
    assert distances[len(distances) // 2] <= 3 and distances[-1] <= 9


def test_unrelated_texts_are_far_apart():
    distances = [hamming(simhash(_article(a)), simhash(_article(b)))
                 for a, b in itertools.combinations(range(8), 2)]
    assert min(distances) >= 16 and 24 <= sum(distances) / len(distances) <= 40


@pytest.mark.parametrize('a,b,bits', [(0, 0, 0), (0, 1, 1), (0b1011, 0b0110, 3),
                                      (0, (1 << 64) - 1, 64)])
def test_hamming(a, b, bits):
    assert hamming(a, b) == bits


@pytest.mark.parametrize('distance,widths', [(0, [64]), (3, [16, 16, 16, 16]),
                                             (4, [13, 13, 13, 13, 12]),
                                             (6, [10, 9, 9, 9, 9, 9, 9])])
def test_band_widths(distance, widths):
    assert band_widths(distance) == widths and sum(widths) == 64


@pytest.mark.parametrize('distance', [-1, 16, 64])
def test_band_distance_out_of_range(distance):
    with pytest.raises(ValueError, match='0 to 15'):
        band_widths(distance)


def test_bands_cover_the_fingerprint():
    value = 0x0123456789abcdef
    assert bands(value, 3) == [(0, 0xcdef), (1, 0x89ab), (2, 0x4567), (3, 0x0123)]
    assert bands(value, 0) == [(0, value)]


@pytest.mark.parametrize('distance', [0, 1, 3, 5])
def test_fingerprints_within_the_distance_share_a_band(distance):
    r = random.Random(distance)
    for _ in range(2000):
        a = r.getrandbits(64)
        b = a
        for bit in r.sample(range(64), r.randint(0, distance)):
            b ^= 1 << bit
        assert set(bands(a, distance)) & set(bands(b, distance))


def test_near_pairs_of_a_band():
    assert near_pairs([('b', 0b111), ('a', 0b000), ('c', 0b001)], 1) == [('a', 'c')]
    assert near_pairs([('b', 0b111), ('a', 0b000), ('c', 0b001)], 3) == [
        ('a', 'b'), ('a', 'c'), ('b', 'c')]


def test_groups_of_pairs_join_transitively():
    assert groups_of_pairs([('c', 'd'), ('a', 'b'), ('b', 'c'), ('x', 'y')]) == [
        ['a', 'b', 'c', 'd'], ['x', 'y']]
    assert groups_of_pairs([]) == []


def _all_pairs_oracle(entries, distance):
    pairs = [(a, b) for (a, x), (b, y) in itertools.combinations(sorted(entries), 2)
             if hamming(x, y) <= distance]
    return groups_of_pairs(pairs)


@pytest.mark.parametrize('distance', [0, 2, 3, 4])
def test_near_groups_equal_all_pairs(distance):
    """Planted clusters of fingerprints a few bits apart among random ones: the banded search
    finds exactly the groups that comparing every pair finds."""
    r = random.Random(7 + distance)
    entries = []
    for cluster in range(30):
        base = r.getrandbits(64)
        for member in range(r.randint(1, 4)):
            value = base
            for bit in r.sample(range(64), r.randint(0, distance + 1)):
                value ^= 1 << bit
            entries.append((f'u{cluster:02d}-{member}', value))
    entries += [(f'z{i:03d}', r.getrandbits(64)) for i in range(200)]
    groups = near_groups(entries, distance)
    assert groups == _all_pairs_oracle(entries, distance)
    assert any(len(g) > 1 for g in groups)


def test_hex_round_trip():
    assert to_hex(0xab) == '00000000000000ab' and from_hex('00000000000000ab') == 0xab
    assert from_hex('xyz') is None and from_hex('') is None and from_hex('zz' * 8) is None
