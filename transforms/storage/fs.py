"""Files and directories of a crawl directory, on any filesystem Beam knows.

Every file operation of the storage layer goes through this module: streams through Beam's
`FileSystems` (so that a crawl directory on HDFS or S3 works from every worker of a cluster),
everything else through the path's store (storage/stores.py), which knows what its filesystem
guarantees: an exclusive create, an atomic replace, directories or only key prefixes. A local
path (one without a scheme) is handled with os functions, as Beam's LocalFileSystem does, and
without importing Beam (storage/stores.py `filesystems`).

Publishing a directory (`publish_dir`, `is_published`): where directories rename atomically
(local, HDFS) a directory is written aside and renamed into place, so it exists only once
complete; on an object store it is written in place and published by a marker object,
`_published`, written last (docs/crawl-dir.md, "Stores").
"""

import fnmatch
import io
import os
from typing import List, Optional

from beamcrawl.transforms.storage.stores import LocalStore, Store, filesystems, store_for

__all__ = ['TMP_PREFIX', 'PUBLISHED', 'join', 'exists', 'mkdirs', 'delete', 'rename',
           'list_files', 'is_local', 'children', 'entries', 'write_file', 'read_file',
           'part_file', 'warc_file', 'PART_GLOB', 'WARC_GLOB', 'store', 'renames',
           'open_read', 'create', 'read_all', 'copy_file', 'publish_dir', 'is_published', 'written_dir',
           'basename']

TMP_PREFIX = '.tmp-'      # what is being written: never mistaken for a complete file
PUBLISHED = '_published'  # on an object store: the marker of a published directory
PART_GLOB = 'part-*.avro'
WARC_GLOB = 'part-*.warc.gz'
_READ_CHUNK = 8 << 20     # read() without a size reads 8 KiB at a time on HDFS: one request each
_SMALL_OBJECT = 8 << 20   # an object store's file up to this size is put in one request


def part_file(directory: str, index: int) -> str:
    """The path of part number `index` in a part directory: part-NNNNN.avro."""
    return join(directory, f'part-{index:05d}.avro')


def warc_file(directory: str, index: int) -> str:
    """The path of WARC file number `index` in a segment's warc/ part: part-NNNNN.warc.gz."""
    return join(directory, f'part-{index:05d}.warc.gz')


def join(*parts: str) -> str:
    if '://' not in parts[0]:
        return os.path.join(*parts)             # what Beam's LocalFileSystem.join does
    return filesystems().join(*parts)


def basename(path: str) -> str:
    return path.rstrip('/').rsplit('/', 1)[-1]


def store(path: str) -> Store:
    """The store of a path (storage/stores.py)."""
    return store_for(path)


def renames(path: str) -> bool:
    """Whether the path's filesystem renames files and directories atomically."""
    return store_for(path).renames


def is_local(path: str) -> bool:
    """Whether a path is on the local filesystem (where os functions apply)."""
    return isinstance(store_for(path), LocalStore)


def exists(path: str) -> bool:
    """Whether a file or a directory exists (on an object store: an object or a prefix)."""
    return store_for(path).exists(path)


def mkdirs(path: str) -> None:
    """Creates a directory (and parents); no error if it exists; nothing on an object store."""
    if is_local(path):
        os.makedirs(path, exist_ok=True)
    elif renames(path) and not exists(path):
        try:
            filesystems().mkdirs(path)
        except IOError:
            if not exists(path):
                raise


def delete(path: str) -> None:
    """Deletes a file or a directory tree; no error if it is absent."""
    store_for(path).delete(path)


def rename(src: str, dst: str) -> None:
    """Renames a file, or a directory where directories rename (`renames`); `dst` must not
    exist."""
    store_for(src).rename(src, dst)


def list_files(pattern: str) -> List[str]:
    """Paths matching a glob pattern (`*` stays within a directory), sorted; empty when nothing
    matches. A directory component may hold a glob too (`run-*/x.avro`): HDFS lists one level
    only, so those are expanded here, one directory at a time."""
    head, _, name = pattern.rpartition('/')
    if any(c in head for c in '*?['):
        cut = min(head.find(c) for c in '*?[' if c in head)
        parent = head[:cut].rpartition('/')[0]
        glob_part, _, rest = head[len(parent) + 1:].partition('/')
        found = []
        for child in children(parent):
            if fnmatch.fnmatchcase(basename(child), glob_part):
                found += list_files('/'.join(p for p in (child, rest, name) if p))
        return sorted(found)
    if '://' not in pattern:
        return _match_local(head, name)
    try:
        result = filesystems().match([pattern])[0]
    except OSError:                             # Beam's BeamIOError
        if not children(head):
            return []                   # HDFS: listing an absent directory, a file, fails
        raise
    return sorted(m.path for m in result.metadata_list)


def _match_local(directory: str, name: str) -> List[str]:
    """list_files of a local pattern whose glob is in its last component, as Beam's
    LocalFileSystem matches it: the entries of the directory but its subdirectories (hidden
    ones too) whose name matches, `*` within the name; a pattern without a glob: itself, when
    it exists."""
    name = name or '*'                          # a pattern ending with '/': its files
    path = os.path.join(directory, name) if directory else name
    if not any(c in name for c in '*?['):
        return [path] if os.path.exists(path) else []
    try:
        names = os.listdir(directory or '.')
    except (FileNotFoundError, NotADirectoryError):
        return []
    paths = (os.path.join(directory, n) for n in names if fnmatch.fnmatchcase(n, name))
    # what os.walk lists as files (a FIFO too, for the part checks to refuse), but a broken link
    return sorted(p for p in paths if os.path.exists(p) and not os.path.isdir(p))


def children(directory: str) -> List[str]:
    """Immediate children (files and directories) of a directory, sorted; empty when absent."""
    return store_for(directory).children(directory)


def entries(directory: str) -> List[str]:
    """Names in a directory (empty when it is absent)."""
    return [basename(p) for p in children(directory)]


def write_file(path: str, data: bytes, *, replace: bool) -> bool:
    """Publishes a small file whole: a reader finds the old file or the new one, never a part.
    With replace=False the file is created only if it does not exist yet (False when it did:
    another run made it first)."""
    target = store_for(path)
    if replace:
        target.replace(path, data)
        return True
    return target.create_exclusive(path, data)


def read_file(path: str) -> Optional[bytes]:
    """A small file's bytes, or None when it does not exist."""
    found = store_for(path).read(path)
    return found[0] if found else None


def open_read(path: str):
    """A file opened for reading its bytes as they are (no decompression)."""
    if '://' not in path:
        return open(path, 'rb')             # what Beam's LocalFileSystem opens
    from apache_beam.io.filesystem import CompressionTypes
    return filesystems().open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def create(path: str):
    """A file created for writing bytes as they are (replacing one of the same name); it
    appears whole when closed on HDFS and S3, as it is written on a local disk."""
    if '://' not in path:
        if os.path.dirname(path):               # as Beam's LocalFileSystem creates a file
            os.makedirs(os.path.dirname(path), exist_ok=True)
        return open(path, 'wb')
    from apache_beam.io.filesystem import CompressionTypes
    if is_local(path) or renames(path):
        if not is_local(path) and exists(path):
            delete(path)                # HDFS refuses to create over a file
        return filesystems().create(path, compression_type=CompressionTypes.UNCOMPRESSED)
    return _ObjectWriter(path)


class _ObjectWriter(io.RawIOBase):
    """A file written to an object store: a small one (up to _SMALL_OBJECT bytes) is put in one
    request when closed, a larger one is streamed as a multipart upload (Beam's S3 writer).
    An empty multipart upload is refused by some stores (SeaweedFS: NoSuchUpload)."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path
        self._buffer = io.BytesIO()
        self._stream = None

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        if self._stream is not None:
            return self._stream.write(data)
        self._buffer.write(data)
        if self._buffer.tell() > _SMALL_OBJECT:
            from apache_beam.io.filesystem import CompressionTypes
            self._stream = filesystems().create(self.path,
                                                compression_type=CompressionTypes.UNCOMPRESSED)
            self._stream.write(self._buffer.getvalue())
            self._buffer = io.BytesIO()
        return len(data)

    def flush(self) -> None:
        if self._stream is not None:
            self._stream.flush()

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self._stream is not None:
                stream, self._stream = self._stream, None
                stream.close()
            else:
                store_for(self.path).replace(self.path, self._buffer.getvalue())
        finally:
            super().close()


def copy_file(src: str, dst: str) -> None:
    """Copies a file's bytes; `dst` appears only complete (written aside and renamed where
    files rename, as a whole object on an object store)."""
    aside = join(dst.rsplit('/', 1)[0], f'{TMP_PREFIX}{basename(dst)}') if renames(dst) else dst
    with open_read(src) as reader, create(aside) as writer:
        while True:
            chunk = reader.read(_READ_CHUNK)
            if not chunk:
                break
            writer.write(chunk)
    if aside != dst:
        if exists(dst):
            delete(dst)
        rename(aside, dst)


def read_all(f) -> bytes:
    """The rest of an open file, read in large chunks (see _READ_CHUNK)."""
    out = io.BytesIO()
    while True:
        chunk = f.read(_READ_CHUNK)
        if not chunk:
            return out.getvalue()
        out.write(chunk)


def written_dir(final: str, aside: str) -> str:
    """Where a directory to be published at `final` is written: `aside` where directories
    rename, `final` itself on an object store (published by its marker)."""
    return aside if renames(final) else final


def publish_dir(written: str, final: str) -> None:
    """Publishes a directory written at `written` (written_dir): renamed into place, or, on an
    object store, marked published. Does nothing when it is published already (a killed run's
    publication being completed)."""
    if renames(final):
        if exists(written) and not exists(final):
            rename(written, final)
        return
    if written != final:
        raise ValueError(f'{written}: on an object store a directory is written in place')
    marker = join(final, PUBLISHED)
    if not exists(marker):
        store_for(marker).replace(marker, b'')


def is_published(final: str) -> bool:
    """Whether a directory published by publish_dir is there (complete)."""
    if renames(final):
        return exists(final)
    return exists(join(final, PUBLISHED))
