"""The merge rules of mergedb, mergelinkdb and mergesegs (Nutch's CrawlDbMerger, LinkDbMerger
and SegmentMerger). Pure, no Beam.

* crawldb (`merge_datums`): of the records of one URL, the newest wins: the greater "last fetch
  time" (0 for db_unfetched, else fetch_time - fetch_interval), ties broken by the greater
  fetch_time; the metadata of all of them is merged, a newer record's value winning. Records
  are taken in input order (the crawl merged into first, then the others as named), and of two
  records equally new the first stays: Nutch leaves this to the reducer's order (D100).
* linkdb (`merge_inlinks`): the union of the inlinks, capped as invertlinks caps them
  (policy/linkdb.py: the smallest (from_url, anchor) pairs are kept).
* segments (`merge_segment_url`): per part, the record of the newest segment (the greatest
  name) that has one, except crawl_fetch and the `linked` records (D101): crawl_fetch keeps the
  fetch record updatedb would pick of all of them, and every `linked` record of every segment is
  kept, so that updatedb of the merged segment gives what updatedb of its inputs gives.
* `slice_of(rank, size)`: with --slice N, the URLs in order, N to a segment.
"""

from typing import Dict, Iterable, List, Mapping, Sequence, Tuple

from beamcrawl.transforms.policy.linkdb import Pair, cap_inlinks
from beamcrawl.transforms.policy.updatedb import pick_fetch
from beamcrawl.transforms.storage.records import FETCH_STATUSES

__all__ = ['last_fetch_time', 'is_newer', 'merge_datums', 'merge_inlinks', 'merge_segment_url',
           'slice_of', 'SEGMENT_RECORD_PARTS']

# The Avro parts of a segment mergesegs merges, in publishing order (docs/crawl-dir.md: the part
# that marks a step done after the parts it completes).
SEGMENT_RECORD_PARTS = ('crawl_generate', 'content', 'crawl_fetch', 'parse_text', 'parse_data',
                        'crawl_parse')


def last_fetch_time(datum: Mapping) -> int:
    """Nutch's FetchSchedule.calculateLastFetchTime, ms: 0 for a URL never fetched, else its
    next fetch time less its interval."""
    if datum['status'] == 'db_unfetched':
        return 0
    return datum['fetch_time'] - datum['fetch_interval'] * 1000


def is_newer(candidate: Mapping, kept: Mapping) -> bool:
    """Whether `candidate` wins over `kept` (CrawlDbMerger's rule; equal: it does not)."""
    a, b = last_fetch_time(candidate), last_fetch_time(kept)
    return a > b or (a == b and candidate['fetch_time'] > kept['fetch_time'])


def merge_datums(datums: Sequence[dict]) -> dict:
    """The crawldb record of one URL from its records in input order: the newest, with the
    metadata of all (a newer record's value wins; see the module's docstring)."""
    kept, metadata = None, {}
    for datum in datums:
        if kept is None or is_newer(datum, kept):
            metadata = {**metadata, **datum['metadata']}
            kept = datum
        else:
            metadata = {**datum['metadata'], **metadata}
    if kept is None:
        raise ValueError('no record to merge')
    return dict(kept, metadata=metadata)


def merge_inlinks(inlink_lists: Iterable[Iterable[Pair]], max_inlinks: int) -> List[Pair]:
    """The inlinks of one URL from every linkdb: their union, capped (linkdb.max.inlinks)."""
    return cap_inlinks((pair for pairs in inlink_lists for pair in pairs), max_inlinks)


def merge_segment_url(items: Iterable[Tuple[str, str, dict]]) -> Dict[str, List[dict]]:
    """The records of one URL in the merged segment, by part, from (segment name, part, record)
    of every input segment: see the module's docstring. Parts without a record are absent."""
    newest: Dict[str, Tuple[str, dict]] = {}      # part → (segment, record)
    fetches: List[dict] = []
    linked: Dict[str, List[dict]] = {'crawl_fetch': [], 'crawl_parse': []}
    for segment, part, record in items:
        if part in linked and record['status'] == 'linked':
            linked[part].append(record)     # two alike are two links (OPIC adds both)
            continue
        if part == 'crawl_fetch':
            if record['status'] in FETCH_STATUSES:
                fetches.append(record)
            continue
        if part == 'crawl_parse' and record['status'] != 'signature':
            continue
        if part not in newest or newest[part][0] < segment:
            newest[part] = (segment, record)
    out = {part: [record] for part, (_, record) in newest.items()}
    fetch = pick_fetch(fetches)
    if fetch is not None:
        out['crawl_fetch'] = [fetch]
    for part, records in linked.items():
        if records:
            out.setdefault(part, []).extend(records)
    return out


def slice_of(rank: int, size: int) -> int:
    """The slice of the URL at `rank` (0-based, in URL order) with slices of `size` URLs; every
    URL is in slice 0 when size is 0."""
    return rank // size if size > 0 else 0
