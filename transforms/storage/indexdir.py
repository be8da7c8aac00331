"""The index directory of a crawl: `index/shard-NNNNN/` (Tantivy indexes, storage/shards.py) and
the notes beside them; shards are installed under `index/.locked` (docs/crawl-dir.md)."""

import os
import uuid
from typing import Dict, List, Optional

from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.storage.fs import TMP_PREFIX, children, delete, join, rename
from beamcrawl.transforms.storage.locks import LOCK_NAME, Lock

__all__ = ['IndexLayout']


class IndexLayout:
    """The index of a crawl directory (a part of CrawlLayout: `self.index` is its directory)."""

    index: str
    INDEXED = '_indexed_segments'
    SHARDS = '_shards'

    def index_shard(self, number: int) -> str:
        return join(self.index, f'shard-{number:05d}')

    def index_shards(self) -> List[str]:
        """The shard directories of the index (sorted; empty when there is no index)."""
        if not FileSystems.exists(self.index):
            return []
        return [c for c in children(self.index)
                if os.path.basename(c.rstrip('/')).startswith('shard-')]

    def index_lock(self, command: str = '') -> Lock:
        return Lock(join(self.index, LOCK_NAME), command, 'another update of the index')

    def new_shard_dir(self, number: int) -> str:
        """A fresh directory beside the shards for a shard's new version."""
        return join(self.index, f'{TMP_PREFIX}shard-{number:05d}-{uuid.uuid4().hex[:8]}')

    def index_note(self, name: str) -> Optional[str]:
        path = join(self.index, name)
        if not FileSystems.exists(path):
            return None
        with FileSystems.open(path) as f:
            return f.read().decode('utf-8')

    def install_shards(self, new: Dict[int, str], notes: Dict[str, str]) -> None:
        """Under the index lock: each new shard version replaces its shard (renamed aside, the
        new one renamed into place, the old one removed), then the notes are written. A run
        killed in between leaves every shard whole: old or new, never half."""
        for number, directory in sorted(new.items()):
            final = self.index_shard(number)
            aside = join(self.index, f'{TMP_PREFIX}old-shard-{number:05d}-{uuid.uuid4().hex[:8]}')
            if FileSystems.exists(final):
                rename(final, aside)
            rename(directory, final)
            delete(aside)
        for name, text in notes.items():
            with FileSystems.create(join(self.index, name)) as f:
                f.write(text.encode('utf-8'))

    def recover_index(self) -> None:
        """Under the index lock: a shard whose install was cut between its two renames is put
        back; abandoned new versions are removed."""
        if not FileSystems.exists(self.index):
            return
        for path in children(self.index):
            name = os.path.basename(path.rstrip('/'))
            if name.startswith(f'{TMP_PREFIX}old-shard-'):
                number = int(name.split('-')[3])
                if not FileSystems.exists(self.index_shard(number)):
                    rename(path, self.index_shard(number))
                    continue
            if name.startswith(TMP_PREFIX):
                delete(path)
