"""The index directory of a crawl: `index/shard-NNNNN/` (Tantivy indexes, storage/shards.py) and
the notes beside them; shards are installed under `index/.locked` (docs/crawl-dir.md).

Tantivy reads and writes a local directory. On a crawl directory elsewhere (HDFS, S3) a shard is
updated in a local working copy, in the worker's own temporary folder, and uploaded as a new
version (`write_shard`); search reads local copies (`local_shards`). Where directories rename
the new version is renamed into place; on an object store, shard versions are
`shard-NNNNN-<id>/` and the object `index/CURRENT` names the installed ones.
"""

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.fs import (TMP_PREFIX, basename, children, delete, exists, join,
                                             read_file, rename, write_file)
from beamcrawl.transforms.storage.locks import LOCK_NAME, Lock

__all__ = ['IndexLayout', 'write_shard', 'local_shards']

_POINTER = 'CURRENT'


class IndexLayout:
    """The index of a crawl directory (a part of CrawlLayout: `self.index` is its directory)."""

    index: str
    INDEXED = '_indexed_segments'
    SHARDS = '_shards'

    def index_shard(self, number: int) -> str:
        """Shard `number`'s directory where directories rename (else: index_shard_dirs)."""
        return join(self.index, f'shard-{number:05d}')

    def _index_pointer(self) -> Tuple[dict, Optional[str]]:
        found = fs.store(join(self.index, _POINTER)).read(join(self.index, _POINTER))
        return (json.loads(found[0].decode('utf-8')), found[1]) if found else ({}, None)

    def index_shard_dirs(self) -> Dict[int, str]:
        """{shard number: directory} of the installed shards (empty when there is no index)."""
        if not fs.renames(self.index):
            shards = self._index_pointer()[0].get('shards', {})
            return {int(n): join(self.index, name) for n, name in shards.items()}
        found = {}
        for path in children(self.index):
            name = basename(path)
            if name.startswith('shard-') and name[6:].isdigit():
                found[int(name[6:])] = path
        return found

    def index_shards(self) -> List[str]:
        """The shard directories of the index (sorted; empty when there is no index)."""
        return [d for _, d in sorted(self.index_shard_dirs().items())]

    def index_lock(self, command: str = '') -> Lock:
        return Lock(join(self.index, LOCK_NAME), command, 'another update of the index')

    def new_shard_dir(self, number: int) -> str:
        """A fresh directory beside the shards for a shard's new version."""
        prefix = TMP_PREFIX if fs.renames(self.index) else ''
        return join(self.index, f'{prefix}shard-{number:05d}-{uuid.uuid4().hex[:8]}')

    def index_note(self, name: str) -> Optional[str]:
        data = read_file(join(self.index, name))
        return data.decode('utf-8') if data is not None else None

    def install_shards(self, new: Dict[int, str], notes: Dict[str, str]) -> None:
        """Under the index lock: each new shard version replaces its shard, then the notes are
        written. A run killed in between leaves every shard whole: old or new, never half.
        Where directories rename, the old shard is renamed aside, the new one into place and
        the old one removed; on an object store one conditional replace of CURRENT installs
        every new shard at once."""
        if not fs.renames(self.index):
            pointed, version = self._index_pointer()
            shards = dict(pointed.get('shards', {}))
            replaced = [shards.get(str(n)) for n in new]
            shards.update({str(n): basename(d) for n, d in new.items()})
            data = json.dumps({'shards': shards}, sort_keys=True).encode('utf-8')
            target, path = fs.store(self.index), join(self.index, _POINTER)
            if not (target.create_exclusive(path, data) if version is None
                    else target.replace_if(path, data, version)):
                raise RuntimeError(f'{path}: changed by another run while this one held the '
                                   f'index lock; the new shards are not installed')
            for name in replaced:
                if name:
                    delete(join(self.index, name))
        else:
            for number, directory in sorted(new.items()):
                final = self.index_shard(number)
                aside = join(self.index,
                             f'{TMP_PREFIX}old-shard-{number:05d}-{uuid.uuid4().hex[:8]}')
                if exists(final):
                    rename(final, aside)
                rename(directory, final)
                delete(aside)
        for name, text in notes.items():
            write_file(join(self.index, name), text.encode('utf-8'), replace=True)

    def recover_index(self) -> None:
        """Under the index lock: a shard whose install was cut between its two renames is put
        back; abandoned new versions are removed."""
        if not fs.renames(self.index):
            kept = {basename(d) for d in self.index_shard_dirs().values()}
            for path in children(self.index):
                name = basename(path)
                if name.startswith('shard-') and name not in kept:
                    delete(path)
            return
        for path in children(self.index):
            name = basename(path)
            if name.startswith(f'{TMP_PREFIX}old-shard-'):
                number = int(name.split('-')[3])
                if not exists(self.index_shard(number)):
                    rename(path, self.index_shard(number))
                    continue
            if name.startswith(TMP_PREFIX):
                delete(path)


def _download(directory: str, local: str) -> None:
    os.makedirs(local, exist_ok=True)
    for path in children(directory):
        with fs.open_read(path) as src, open(os.path.join(local, basename(path)), 'wb') as dst:
            shutil.copyfileobj(src, dst, 8 << 20)


def _upload(local: str, directory: str) -> None:
    for name in sorted(os.listdir(local)):
        with open(os.path.join(local, name), 'rb') as src, fs.create(join(directory, name)) as dst:
            shutil.copyfileobj(src, dst, 8 << 20)


def write_shard(update, old: Optional[str], new: str, deletions: Iterable[str],
                documents: Iterable[dict]):
    """`update(old, new, deletions, documents)` (shards.update_shard) for shard directories on
    any filesystem: on a local one directly; elsewhere on local working copies in this process's
    own temporary folder, the new version uploaded to `new` (a fresh directory)."""
    if fs.is_local(new):
        return update(old, new, deletions, documents)
    work = tempfile.mkdtemp(prefix='beamcrawl-shard-')
    try:
        local_old = None
        if old and exists(old):
            local_old = os.path.join(work, 'old')
            _download(old, local_old)
        local_new = os.path.join(work, 'new')
        result = update(local_old, local_new, deletions, documents)
        delete(new)                                # a retried attempt's upload
        _upload(local_new, new)
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def local_shards(shard_dirs: List[str]) -> Iterator[List[str]]:
    """Local directories of the shards (copies in a temporary folder for shards that are not on
    a local filesystem, removed afterwards)."""
    if all(fs.is_local(d) for d in shard_dirs):
        yield shard_dirs
        return
    work = tempfile.mkdtemp(prefix='beamcrawl-search-')
    try:
        local = []
        for number, directory in enumerate(shard_dirs):
            local.append(os.path.join(work, f'{number:05d}'))
            _download(directory, local[-1])
        yield local
    finally:
        shutil.rmtree(work, ignore_errors=True)
