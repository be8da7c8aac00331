"""Signatures (MD5, TextMD5, TextProfile) as table tests."""

import hashlib

import pytest

from beamcrawl.transforms.policy.signature import (md5_signature, signature, signature_kind,
                                                   text_md5_signature, text_profile_signature)


def md5(text):
    return hashlib.md5(text.encode('utf-8')).digest()


def test_md5_signature():
    assert md5_signature(b'abc', 'http://a/') == hashlib.md5(b'abc').digest()
    assert md5_signature(b'', 'http://a/') == md5('http://a/')
    assert len(md5_signature(b'x', 'u')) == 16


def test_text_md5_signature():
    assert text_md5_signature('hello', b'raw', 'u') == md5('hello')
    assert text_md5_signature('', b'raw', 'u') == hashlib.md5(b'raw').digest()


@pytest.mark.parametrize('text,profile', [
    # max count 3 → QUANT 2: counts floor to even numbers; singletons dropped
    ('apple apple apple banana banana cherry', 'apple 2\nbanana 2'),
    # no repeats: QUANT 1, every token ≥ 3 chars kept, ties sorted by token
    ('Zebra apple Mango', 'apple 1\nmango 1\nzebra 1'),
    # tokens of 2 characters or fewer are ignored; punctuation splits tokens
    ('ab ab ab abc, abc; x-ray', 'abc 2'),
    # letters and digits only; underscores split
    ('foo_bar foo_bar 123 123', '123 2\nbar 2\nfoo 2'),
    # 250 × 'word' → QUANT round(2.5) = 3 (Java rounds half up): 249; 'other' ×5 → 3
    (' '.join(['word'] * 250 + ['other'] * 5), 'word 249\nother 3'),
])
def test_text_profile_signature(text, profile):
    assert text_profile_signature(text, b'', 'u') == md5(profile)


def test_text_profile_is_tolerant_of_small_changes():
    base = ' '.join(['crawler'] * 20 + ['politeness'] * 10 + ['fetch'] * 6)
    assert text_profile_signature(base + ' extra words here', b'', 'u') == \
        text_profile_signature(base, b'', 'u')
    assert text_profile_signature('', b'raw', 'u') == hashlib.md5(b'raw').digest()


def test_text_profile_non_ascii_tokens():
    # '²' is a digit to Python's \\w but not to Java's isLetterOrDigit: it splits the token
    assert text_profile_signature('straße straße x²yz x²yz', b'', 'u') == md5('straße 2')


@pytest.mark.parametrize('name,kind', [
    ('org.apache.nutch.crawl.MD5Signature', 'md5'), ('MD5Signature', 'md5'),
    ('text-md5', 'text-md5'), ('org.apache.nutch.crawl.TextProfileSignature', 'text-profile')])
def test_signature_kinds(name, kind):
    assert signature_kind(name) == kind


def test_unknown_signature_kind():
    with pytest.raises(ValueError, match='db.signature.class'):
        signature_kind('SHA1Signature')
    assert signature('text-md5', content=b'', text='t', url='u') == md5('t')
