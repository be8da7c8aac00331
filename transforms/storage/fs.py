"""Files and directories of a crawl directory, on any filesystem Beam knows.

Every file operation of the storage layer goes through `apache_beam.io.filesystems.FileSystems`,
so that a crawl directory on a shared filesystem works on a cluster runner; where the path is
local, the os functions that give stronger guarantees are used (an exclusive create, a rename
that replaces). `write_file` publishes a small file whole.
"""

import os
import uuid
from typing import List, Optional

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.localfilesystem import LocalFileSystem

__all__ = ['TMP_PREFIX', 'join', 'exists', 'mkdirs', 'delete', 'rename', 'list_files',
           'is_local', 'children', 'entries', 'write_file', 'read_file', 'part_file',
           'warc_file', 'PART_GLOB', 'WARC_GLOB']

TMP_PREFIX = '.tmp-'      # what is being written: never mistaken for a complete file
PART_GLOB = 'part-*.avro'
WARC_GLOB = 'part-*.warc.gz'


def part_file(directory: str, index: int) -> str:
    """The path of part number `index` in a part directory: part-NNNNN.avro."""
    return FileSystems.join(directory, f'part-{index:05d}.avro')


def warc_file(directory: str, index: int) -> str:
    """The path of WARC file number `index` in a segment's warc/ part: part-NNNNN.warc.gz."""
    return FileSystems.join(directory, f'part-{index:05d}.warc.gz')


def join(*parts: str) -> str:
    return FileSystems.join(*parts)


def exists(path: str) -> bool:
    return FileSystems.exists(path)


def mkdirs(path: str) -> None:
    """Creates a directory (and parents); no error if it exists."""
    if FileSystems.exists(path):
        return
    try:
        FileSystems.mkdirs(path)
    except (IOError, BeamIOError):
        if not FileSystems.exists(path):
            raise


def delete(path: str) -> None:
    """Deletes a file or a directory tree; no error if it is absent."""
    if FileSystems.exists(path):
        FileSystems.delete([path])


def rename(src: str, dst: str) -> None:
    FileSystems.rename([src], [dst])


def list_files(pattern: str) -> List[str]:
    """Paths matching a glob pattern, sorted; empty when nothing matches."""
    result = FileSystems.match([pattern])[0]
    return sorted(m.path for m in result.metadata_list)


def is_local(path: str) -> bool:
    """Whether a path is on the local filesystem (where os functions apply)."""
    return isinstance(FileSystems.get_filesystem(path), LocalFileSystem)


def children(directory: str) -> List[str]:
    """Immediate children (files and directories) of a directory."""
    if is_local(directory):
        return sorted(os.path.join(directory, n) for n in os.listdir(directory))
    prefix = directory.rstrip('/') + '/'
    names = set()
    for path in list_files(prefix + '*'):
        names.add(prefix + path[len(prefix):].split('/', 1)[0])
    return sorted(names)


def entries(directory: str) -> List[str]:
    """Names in a directory (empty when it is absent)."""
    if not FileSystems.exists(directory):
        return []
    return [os.path.basename(p.rstrip('/')) for p in children(directory)]


def write_file(path: str, data: bytes, *, replace: bool) -> bool:
    """Publishes a small file whole: written aside, then moved into place, so a reader finds the
    old file or the new one, never a part. With replace=False the file is created only if it
    does not exist yet (False when it did: another run made it first)."""
    aside = f'{path}{TMP_PREFIX}{uuid.uuid4().hex[:8]}'
    if is_local(path):
        os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
        with open(aside, 'wb') as f:
            f.write(data)
        try:
            if replace:
                os.replace(aside, path)
                return True
            try:
                os.link(aside, path)            # fails when the file exists
                return True
            except FileExistsError:
                return False
        finally:
            if os.path.exists(aside):
                os.remove(aside)
    if not replace and FileSystems.exists(path):
        return False
    with FileSystems.create(aside) as f:
        f.write(data)
    if replace and FileSystems.exists(path):
        delete(path)
    rename(aside, path)
    return True


def read_file(path: str) -> Optional[bytes]:
    """A small file's bytes, or None when it does not exist."""
    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path) as f:
        return f.read()
