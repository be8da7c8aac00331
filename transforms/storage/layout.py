"""The crawl directory (docs/crawl-dir.md): every path, the locks, and every publish.

Nothing else in the project builds a crawl-dir path, names a part or publishes output. The
crawl directory is made of: its databases (storage/databases.py: `DbLayout.update()` writes a
version aside and installs it), its segments (storage/segments.py: `segment_update()` writes
parts aside and publishes them, the marker part last), its index (storage/indexdir.py), its
recorded site settings (`site_conf`), and the check that it holds no data in another layout
(storage/foreign.py). Locks and installs run in the driver program, never in a DoFn.
"""

import os
import time
import uuid

from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.storage import foreign
from beamcrawl.transforms.storage.databases import POINTER, DbLayout
from beamcrawl.transforms.storage.fs import entries, exists, is_local, join
from beamcrawl.transforms.storage.indexdir import IndexLayout
from beamcrawl.transforms.storage.segments import SegmentLayout

__all__ = ['CrawlLayout', 'SITE_CONF', 'database_at', 'OUTLINKS', 'INLINKS', 'NODES',
           'WEBGRAPH_PARTS']

SITE_CONF = 'crawl-conf.yaml'
# The directories of a webgraphdb version (docs/crawl-dir.md, "webgraphdb").
OUTLINKS, INLINKS, NODES = 'outlinks', 'inlinks', 'nodes'
WEBGRAPH_PARTS = (OUTLINKS, INLINKS, NODES)


class CrawlLayout(SegmentLayout, IndexLayout):
    """Every path of a crawl directory."""

    def __init__(self, crawl_dir: str):
        self.root = crawl_dir.rstrip('/') if len(crawl_dir) > 1 else crawl_dir
        self.crawldb = DbLayout(join(self.root, 'crawldb'), 'crawldb')
        self.linkdb = DbLayout(join(self.root, 'linkdb'), 'linkdb')
        self.hostdb = DbLayout(join(self.root, 'hostdb'), 'hostdb')
        # webgraph's database: a version holds outlinks/, inlinks/ and nodes/ (WEBGRAPH_PARTS)
        self.webgraphdb = DbLayout(join(self.root, 'webgraphdb'), 'webgraphdb')
        self.segments = join(self.root, 'segments')
        self.tmp = join(self.root, '.tmp')
        self.index = join(self.root, 'index')
        # The site settings this crawl directory was created with (base/config.py).
        self.site_conf = join(self.root, SITE_CONF)

    def refuse_foreign(self) -> None:
        """Raises InputError when the crawl directory holds data beamcrawl did not write, or is
        not a directory (storage/foreign.py). Every command calls it first."""
        foreign.refuse_foreign(self)

    def scratch_dir(self, what: str) -> str:
        """A fresh scratch directory for a reader's pipeline output (caller deletes it)."""
        return join(self.tmp, f'{what}-{int(time.time())}-{uuid.uuid4().hex[:8]}')


def database_at(path: str, kind: str) -> DbLayout:
    """The database `kind` ('crawldb' or 'linkdb') that `path` names: a crawl directory's, or
    the database directory itself (the one holding current/). Checked like a crawl directory
    (storage/foreign.py); InputError when there is no such database with a readable version."""
    path = path.rstrip('/') if len(path) > 1 else path
    if is_local(path) and os.path.exists(path) and not os.path.isdir(path):
        raise InputError(f'{path}: is a file, not a crawl directory or a {kind}')
    if not exists(path):
        raise InputError(f'{path}: no such crawl directory or {kind}')
    here = entries(path)
    if {kind, 'crawldb', 'linkdb', 'segments'} & set(here) or not here:
        crawl = CrawlLayout(path)
        crawl.refuse_foreign()
        db = crawl.crawldb if kind == 'crawldb' else crawl.linkdb
    elif {'current', 'old', POINTER} & set(here):
        db = DbLayout(path, kind)
        foreign.refuse_foreign_db(db)
    else:
        raise InputError(f'{path}: neither a crawl directory with a {kind} nor a {kind}')
    if db.readable_dir() is None:
        raise InputError(f'{path}: has no {kind}')
    return db
