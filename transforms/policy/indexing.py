"""What the indexer makes of a URL: a document, a deletion, or nothing; and which of several
pages with the same content is kept (Nutch's IndexerMapReduce and DeduplicationJob). Pure.

* `build_document(...)`: a page that the crawldb says was fetched (db_fetched, db_notmodified)
  and that has a parse becomes a document: url, host, title, text, anchors (the inlinks' anchor
  texts, deduplicated, in from-URL order), content type, fetch time, score, boost, signature,
  outlink count, language. Its boost is Nutch's OPIC indexer score: score ** power.
* `deletion(...)`: a page that is gone, a redirect or a duplicate is removed from the index.
* `original_key(...)`: of the fetched pages sharing one signature, the one with the smallest key
  stays: Nutch's order, the highest score, then the latest fetch time, then the shortest URL
  after percent-decoding (then the smaller URL, so the choice never depends on order).
"""

import dataclasses
import urllib.parse
from typing import Iterable, List, Optional, Tuple

from beamcrawl.transforms.policy.urlparts import host_of

__all__ = ['IndexRules', 'INDEXABLE', 'DELETED', 'build_document', 'deletion', 'boost',
           'original_key', 'duplicates_of']

INDEXABLE = frozenset({'db_fetched', 'db_notmodified'})
DELETED = frozenset({'db_gone', 'db_redir_temp', 'db_redir_perm', 'db_duplicate'})


@dataclasses.dataclass(frozen=True)
class IndexRules:
    score_power: float            # indexer.score.power
    max_text_length: int          # indexer.max.content.length, characters (-1: all)
    max_anchors: int              # indexer.max.anchors (-1: all)
    text_field: str = 'text'      # indexer.text.field: text or main_text


def boost(score: float, power: float) -> float:
    """Nutch's OPIC indexer score: score ** power (0 for a score of 0 or less)."""
    return float(score) ** power if score > 0 else 0.0


def anchors_of(inlinks: Iterable[Tuple[str, str]], limit: int) -> List[str]:
    """The distinct, non-empty anchor texts of (from_url, anchor) pairs, in from-URL order."""
    out, seen = [], set()
    for _, anchor in sorted(inlinks):
        text = ' '.join(anchor.split())
        if text and text not in seen:
            seen.add(text)
            out.append(text)
            if 0 <= limit <= len(out):
                break
    return out


def build_document(db: dict, inlinks: Iterable[Tuple[str, str]], parse_data: Optional[dict],
                   parse_text: Optional[dict], rules: IndexRules) -> Optional[dict]:
    """The document of a URL (None when it is not indexable or has no parse)."""
    if db['status'] not in INDEXABLE or parse_data is None:
        return None
    if parse_data['parse_status'] not in ('success', 'success_redirect'):
        return None
    meta = parse_data.get('metadata') or {}
    texts = parse_text or {}
    text = (texts.get('main_text') if rules.text_field == 'main_text' else '') or \
        texts.get('text', '')
    if rules.max_text_length >= 0:
        text = text[:rules.max_text_length]
    db_meta = db.get('metadata') or {}
    return {
        'url': db['url'],
        'host': host_of(db['url']),
        'title': parse_data.get('title', ''),
        'text': text,
        'anchors': anchors_of(inlinks, rules.max_anchors),
        'content_type': db_meta.get('Content-Type', ''),
        'fetch_time': _fetch_time(meta, db),
        'score': float(db['score']),
        'boost': boost(db['score'], rules.score_power),
        'signature': (db.get('signature') or b'').hex(),
        'outlinks': len(parse_data.get('outlinks') or []),
        'lang': meta.get('lang.detected') or meta.get('lang', ''),
    }


def _fetch_time(parse_meta: dict, db: dict) -> int:
    """When the page was fetched: parse records it (`_ftk_`); older segments lack it, and then
    the crawldb's next fetch time minus the interval is the best guess."""
    try:
        return int(parse_meta['_ftk_'])
    except (KeyError, ValueError):
        return int(db['fetch_time'] - db['fetch_interval'] * 1000)


def deletion(db: dict) -> Optional[str]:
    """Why a URL must leave the index (its status), or None."""
    return db['status'] if db['status'] in DELETED else None


def original_key(record: dict) -> tuple:
    """Sort key of a duplicate group: the smallest is kept. Nutch's DeduplicationJob order
    (its default compareOrder score,fetchTime,urlLength): the higher score, then the later
    fetch time (the crawldb's next-fetch time), then the shorter URL after percent-decoding;
    then the smaller URL, where Nutch would keep both (docs/nutch-differences.md)."""
    url = record['url']
    return (-record['score'], -record['fetch_time'], len(_unquoted(url)), url)


def _unquoted(url: str) -> str:
    return urllib.parse.unquote(url) if '%' in url else url


def duplicates_of(group: Iterable[tuple]) -> List[tuple]:
    """Of a group of pages sharing a signature, as tuples whose first item is the page's
    `original_key`, all but the one kept (the smallest key), in key order."""
    return sorted(group, key=lambda entry: entry[0])[1:]
