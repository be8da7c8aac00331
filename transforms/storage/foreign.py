"""Data beamcrawl did not write (docs/crawl-dir.md, "Data beamcrawl did not write"): a crawldb,
linkdb or segment in another layout, such as Nutch's, is refused before anything reads it or
writes into it."""

import os
import re
from typing import Optional

from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.storage.fs import entries, exists, is_local, join
from beamcrawl.transforms.storage.segments import SEGMENT_PARTS

__all__ = ['refuse_foreign', 'refuse_foreign_db']

# What beamcrawl itself writes into a database version and into a segment's part directory:
# parts and their keys files, notes (`_name`) and hidden working files (`.name`). Anything else
# there, such as Hadoop's `part-r-00000` MapFiles and SequenceFiles, is someone else's data.
_OURS_IN_VERSION = re.compile(r'part-\d{5}\.(avro|keys)|[_.].*')
_OURS_IN_PART = re.compile(r'part-\d{5}\.(avro|warc\.gz)|[_.].*')
# The parts of Nutch's own layout, by which a directory given as CRAWL_DIR is recognised.
_NUTCH_DB_SIGN = re.compile(r'part-([rm]-)?\d{5}')


def _foreign_entry(directory: str, ours: 're.Pattern') -> Optional[str]:
    """The path of the first entry of `directory` that beamcrawl does not write, or None."""
    for name in entries(directory):
        if not ours.fullmatch(name):
            return join(directory, name)
    return None


def refuse_foreign(crawl) -> None:
    """Raises InputError, naming what was found, when the crawl directory holds a crawldb,
    linkdb or segment that is not in beamcrawl's layout (a Nutch crawl, another program's
    files), or is not a directory at all. Every command calls it first, so that nothing in
    such data is read as empty or changed (docs/crawl-dir.md, "Data beamcrawl did not
    write")."""
    if is_local(crawl.root) and os.path.exists(crawl.root) and not os.path.isdir(crawl.root):
        raise InputError(f'{crawl.root}: is a file, not a crawl directory (name a directory; '
                         f'it is created if absent)')
    if not exists(crawl.root):
        return
    here = entries(crawl.root)
    for name, what in (('current', 'a crawldb or linkdb'),
                       ('crawl_generate', 'a segment'), ('crawl_fetch', 'a segment')):
        if name in here and 'crawldb' not in here and 'segments' not in here:
            raise InputError(
                f'{crawl.root}: looks like {what} itself ({join(crawl.root, name)}), not a '
                f'crawl directory: beamcrawl commands take the crawl directory that holds '
                f'crawldb/, linkdb/ and segments/')
    for db in (crawl.crawldb, crawl.linkdb, crawl.hostdb):
        for version in db.version_dirs():
            found = _foreign_entry(version, _OURS_IN_VERSION)
            if found:
                raise InputError(_foreign(found, f'the {db.kind}'))
    for segment in crawl.segment_names():
        for part in entries(crawl.segment(segment)):
            if part in SEGMENT_PARTS:
                found = _foreign_entry(crawl.segment_part(segment, part), _OURS_IN_PART)
                if found:
                    raise InputError(_foreign(found, f'segment {segment}'))

def refuse_foreign_db(db) -> None:
    """Raises InputError when a database directory named by itself (a merge's input) holds a
    version that is not in beamcrawl's layout."""
    for version in db.version_dirs():
        found = _foreign_entry(version, _OURS_IN_VERSION)
        if found:
            raise InputError(_foreign(found, f'the {db.kind}'))


def _foreign(found: str, what: str) -> str:
    name = os.path.basename(found.rstrip('/'))
    kind = ("Nutch's (Hadoop) format" if _NUTCH_DB_SIGN.fullmatch(name) or name == '_SUCCESS'
            else "a layout beamcrawl does not write")
    bring = (' (to bring a Nutch crawl over: beamcrawl import-nutch NUTCH_CRAWL_DIR '
             'NEW_CRAWL_DIR)' if kind.startswith('Nutch') else '')
    return (f'{found}: {what} is in {kind}, not beamcrawl\'s; beamcrawl neither reads nor '
            f'changes it: use another crawl directory{bring}')
