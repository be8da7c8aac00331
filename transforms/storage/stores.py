"""What the filesystem of a crawl directory guarantees, and the operations beamcrawl needs that
Beam's FileSystems does not offer or does not do right on every filesystem: an exclusive create,
an atomic replace, a replace that holds only while a file is unchanged, and the directory
operations of a store without directories (docs/crawl-dir.md, "Stores").

  LocalStore   a POSIX filesystem: directories rename atomically; a written block is there once
               flushed; os.link creates exclusively, os.replace replaces atomically
  HdfsStore    HDFS (WebHDFS, through the client of Beam's HadoopFileSystem): directories
               rename atomically (not onto an existing path); CREATE with overwrite=false is
               exclusive, RENAME with OVERWRITE replaces; a file appears when its writer closes
  S3Store      an S3-compatible object store (through the boto3 client of Beam's S3 options):
               no rename at all (a copy, then a delete), no directories (a key prefix), an
               object appears whole when its upload ends; PUT with If-None-Match: * creates
               exclusively, If-Match replaces only what was read

`store_for(path)` gives the store of a path, from the FileSystems Beam has for its scheme (their
options come from the command line: FileSystems.set_options in pipelines/cli.py; on a worker,
from the pipeline's options).
"""

import importlib
import os
import shutil
import sys
import threading
import uuid
from typing import Dict, List, Optional, Tuple

__all__ = ['Store', 'LocalStore', 'HdfsStore', 'S3Store', 'store_for', 'explain', 'check_options',
           'load_filesystems_on_demand', 'filesystems']


def filesystems():
    """Beam's FileSystems, imported on first use: a local path never needs it, so a command on a
    local crawl directory can do its first work before Beam's import (0.3 s: the fetch's head
    start, docs/performance.md). The S3 clients are shared from the first use on."""
    from apache_beam.io.filesystems import FileSystems
    global _SHARING_CHECKED
    if not _SHARING_CHECKED:
        _SHARING_CHECKED = True
        if sys.modules.get(_S3_FILESYSTEM, 0) is not None:
            _share_s3_clients()
    return FileSystems


class Store:
    """The guarantees and the operations of one filesystem. Paths are full paths or URLs."""

    #: files and directories rename atomically: a directory is published by renaming it into
    #: place (local, HDFS); on a store without (S3) it is written in place and published by a
    #: marker or a pointer object (storage/segments.py, storage/databases.py)
    renames = True
    #: a file being written can be read up to its last flush (an append-only journal works);
    #: elsewhere a journal is written as a series of files (fetcher/journal/writing.py)
    appendable = False
    #: what the docs call this store
    name = ''

    # -- small files ------------------------------------------------------------------------

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Creates `path` with `data` unless it exists; False when it did (another writer was
        first). A reader finds the whole content or no file."""
        raise NotImplementedError

    def replace(self, path: str, data: bytes) -> None:
        """Writes `path` with `data` whole: a reader finds the old content or the new one."""
        raise NotImplementedError

    def read(self, path: str) -> Optional[Tuple[bytes, str]]:
        """(content, version) of a small file, None when it is absent; `version` identifies this
        content for replace_if."""
        raise NotImplementedError

    def replace_if(self, path: str, data: bytes, version: str) -> bool:
        """replace, only while `path` still holds the content `read` returned with `version`;
        False when it changed meanwhile (another writer)."""
        current = self.read(path)
        if current is None or current[1] != version:
            return False
        self.replace(path, data)
        return True

    # -- files and directories --------------------------------------------------------------

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """`length` bytes of a file from `offset`, in one request (a buffered reader would read
        ahead a whole buffer); fewer only at the end of the file."""
        raise NotImplementedError

    def exists(self, path: str) -> bool:
        """Whether a file or a directory (on S3: any object under the prefix) exists."""
        return filesystems().exists(path)

    def children(self, directory: str) -> List[str]:
        """The immediate children (files and directories) of a directory, sorted; empty when
        it is absent."""
        raise NotImplementedError

    def delete(self, path: str) -> None:
        """Deletes a file or a directory tree; no error when it is absent."""
        FileSystems = filesystems()
        if FileSystems.exists(path):
            FileSystems.delete([path])

    def rename(self, src: str, dst: str) -> None:
        """Renames a file or (where `renames`) a directory; `dst` must not exist."""
        filesystems().rename([src], [dst])


class LocalStore(Store):
    renames = True
    appendable = True
    name = 'a local filesystem'

    def create_exclusive(self, path, data):
        os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
        aside = f'{path}.{uuid.uuid4().hex[:8]}.aside'
        with open(aside, 'wb') as f:
            f.write(data)
        try:
            os.link(aside, path)                # fails when the file exists
            return True
        except FileExistsError:
            return False
        finally:
            os.remove(aside)

    def replace(self, path, data):
        os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
        aside = f'{path}.{uuid.uuid4().hex[:8]}.aside'
        try:
            with open(aside, 'wb') as f:
                f.write(data)
            os.replace(aside, path)
        finally:
            if os.path.exists(aside):
                os.remove(aside)

    def read(self, path):
        try:
            with open(path, 'rb') as f:
                data = f.read()
            stat = os.stat(path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        return data, f'{stat.st_ino}:{stat.st_mtime_ns}:{stat.st_size}'

    # replace_if: between one process's read and its replace another could replace. Locks on
    # a local disk are taken over only from a dead process of this host (storage/locks.py),
    # which cannot race; the check narrows what remains to nothing practical.

    def read_range(self, path, offset, length):
        with open(path, 'rb') as f:
            f.seek(offset)
            return f.read(length)

    def exists(self, path):
        return os.path.exists(path)

    def children(self, directory):
        try:
            return sorted(os.path.join(directory, n) for n in os.listdir(directory))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def delete(self, path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=False)
        elif os.path.lexists(path):
            os.remove(path)

    def rename(self, src, dst):
        if os.path.exists(dst):
            raise FileExistsError(17, 'File exists', dst)
        os.makedirs(os.path.dirname(dst) or '.', exist_ok=True)
        os.rename(src, dst)


class HdfsStore(Store):
    renames = True
    appendable = False
    name = 'HDFS'

    def __init__(self, filesystem):
        self.fs = filesystem                       # Beam's HadoopFileSystem
        self.client = filesystem._hdfs_client      # pylint: disable=protected-access

    def _path(self, url: str) -> str:
        return self.fs._parse_url(url)[1]         # pylint: disable=protected-access

    def _url(self, url: str, child: str) -> str:
        return url.rstrip('/') + '/' + child

    def create_exclusive(self, path, data):
        import hdfs
        try:
            self.client.write(self._path(path), data=data, overwrite=False)
            return True
        except hdfs.HdfsError as e:
            if 'exists' in str(e).lower():
                return False
            raise OSError(f'{path}: {e}') from e

    def replace(self, path, data):
        target = self._path(path)
        aside = f'{target}.{uuid.uuid4().hex[:8]}.aside'
        self.client.write(aside, data=data, overwrite=True)
        # WebHDFS RENAME with OVERWRITE: one operation of the NameNode (an error status is
        # raised by the client; a success answers with an empty body)
        self.client._rename(                            # pylint: disable=protected-access
            aside, destination=self.client.resolve(target), renameoptions='OVERWRITE')

    def read(self, path):
        import hdfs
        target = self._path(path)
        status = self.client.status(target, strict=False)
        if status is None or status.get('type') != 'FILE':
            return None
        try:
            with self.client.read(target) as f:
                data = f.read()
        except hdfs.HdfsError:
            return None
        return data, f'{status.get("fileId")}:{status.get("modificationTime")}:{len(data)}'

    def read_range(self, path, offset, length):
        import hdfs
        try:
            with self.client.read(self._path(path), offset=offset, length=length) as f:
                return f.read()
        except hdfs.HdfsError as e:
            if 'after EOF' in str(e):       # an offset at or past the end: nothing there
                return b''
            raise

    def exists(self, path):
        return self.client.status(self._path(path), strict=False) is not None

    def children(self, directory):
        import hdfs
        try:
            names = self.client.list(self._path(directory))
        except hdfs.HdfsError:
            return []
        return sorted(self._url(directory, n) for n in names)

    def delete(self, path):
        self.client.delete(self._path(path), recursive=True)

    def rename(self, src, dst):
        if self.exists(dst):
            raise FileExistsError(17, 'File exists', dst)
        parent = self._path(dst).rsplit('/', 1)[0]
        if parent:
            self.client.makedirs(parent)
        self.client.rename(self._path(src), self._path(dst))


class S3Store(Store):
    renames = False
    appendable = False
    name = 'an S3-compatible object store'

    def __init__(self, filesystem):
        from apache_beam.io.aws.clients.s3 import boto3_client
        self.client = boto3_client.Client(
            options=filesystem._options).client   # pylint: disable=protected-access

    @staticmethod
    def _bucket_key(path: str) -> Tuple[str, str]:
        bucket, _, key = path[len('s3://'):].partition('/')
        return bucket, key

    def create_exclusive(self, path, data):
        bucket, key = self._bucket_key(path)
        try:
            self.client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch='*')
            return True
        except self.client.exceptions.ClientError as e:
            if _status(e) in (409, 412):
                return False
            raise

    def replace(self, path, data):
        bucket, key = self._bucket_key(path)
        self.client.put_object(Bucket=bucket, Key=key, Body=data)

    def read(self, path):
        bucket, key = self._bucket_key(path)
        try:
            response = self.client.get_object(Bucket=bucket, Key=key)
        except self.client.exceptions.NoSuchKey:
            return None
        except self.client.exceptions.ClientError as e:
            if _status(e) == 404:
                return None
            raise
        return response['Body'].read(), response['ETag']

    def replace_if(self, path, data, version):
        bucket, key = self._bucket_key(path)
        try:
            self.client.put_object(Bucket=bucket, Key=key, Body=data, IfMatch=version)
            return True
        except self.client.exceptions.ClientError as e:
            if _status(e) in (404, 409, 412):
                return False
            raise

    def read_range(self, path, offset, length):
        if length <= 0:
            return b''
        bucket, key = self._bucket_key(path)
        try:
            response = self.client.get_object(Bucket=bucket, Key=key,
                                              Range=f'bytes={offset}-{offset + length - 1}')
        except self.client.exceptions.ClientError as e:
            if _status(e) == 416:           # an offset at or past the end: nothing there
                return b''
            raise
        return response['Body'].read()

    def _keys(self, bucket: str, prefix: str, delimiter: str = ''):
        """(keys, common prefixes) under a prefix, every page."""
        keys, prefixes = [], []
        paginator = self.client.get_paginator('list_objects_v2')
        args = {'Bucket': bucket, 'Prefix': prefix}
        if delimiter:
            args['Delimiter'] = delimiter
        for page in paginator.paginate(**args):
            keys += [c['Key'] for c in page.get('Contents', ())]
            prefixes += [p['Prefix'] for p in page.get('CommonPrefixes', ())]
        return keys, prefixes

    def exists(self, path):
        bucket, key = self._bucket_key(path)
        if key and not key.endswith('/'):
            try:
                self.client.head_object(Bucket=bucket, Key=key)
                return True
            except self.client.exceptions.ClientError as e:
                if _status(e) != 404:
                    raise
        prefix = key.rstrip('/') + '/' if key.strip('/') else ''
        try:
            page = self.client.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1)
        except self.client.exceptions.NoSuchBucket:
            return False
        return bool(page.get('KeyCount') or page.get('Contents'))

    def children(self, directory):
        bucket, key = self._bucket_key(directory)
        prefix = key.rstrip('/') + '/' if key.strip('/') else ''
        try:
            keys, prefixes = self._keys(bucket, prefix, '/')
        except self.client.exceptions.NoSuchBucket:
            return []
        return sorted({f's3://{bucket}/{k.rstrip("/")}' for k in keys + prefixes
                       if k.rstrip('/') != prefix.rstrip('/')})

    def delete(self, path):
        """The object `path` and every object under `path/`; then the folders under it,
        deepest first: a store with a filer (SeaweedFS) keeps an emptied folder and lists it
        as a common prefix, as if something were still there."""
        bucket, key = self._bucket_key(path)
        keys = [key] if key and not key.endswith('/') else []
        folders = []
        if key.strip('/'):
            pending = [key.rstrip('/') + '/']
            try:
                while pending:
                    prefix = pending.pop()
                    found, below = self._keys(bucket, prefix, '/')
                    keys += found
                    folders.append(prefix)
                    pending += below
            except self.client.exceptions.NoSuchBucket:
                return
        folders.sort(key=lambda f: -f.count('/'))
        for batch in (keys, folders):
            for start in range(0, len(batch), 1000):
                self.client.delete_objects(Bucket=bucket, Delete={
                    'Objects': [{'Key': k} for k in batch[start:start + 1000]], 'Quiet': True})

    def rename(self, src, dst):
        """A file only: copied (on the server), then deleted. Not atomic: a rename on S3 is used
        only inside a part directory that a marker publishes afterwards."""
        source, target = self._bucket_key(src), self._bucket_key(dst)
        self.client.copy({'Bucket': source[0], 'Key': source[1]}, target[0], target[1])
        self.client.delete_object(Bucket=source[0], Key=source[1])


_S3_OPTIONS = ('s3_access_key_id', 's3_secret_access_key', 's3_session_token', 's3_endpoint_url',
               's3_disable_ssl', 's3_region_name', 's3_api_version', 's3_verify')
_S3_CLIENTS: dict = {}


def _share_s3_clients() -> None:
    """Beam's S3 filesystem makes a new boto3 session and client for every operation (an open,
    a match, an exists): 0.15 s each, 17 of the 20 s of an index command on S3 (measured,
    docs/scaling.md). With this, one client is made per endpoint and credentials and shared
    (boto3's clients are thread-safe); nothing else of Beam's S3 client changes."""
    try:
        from apache_beam.io.aws.clients.s3 import boto3_client
        from apache_beam.options.pipeline_options import PipelineOptions, S3Options
    except ImportError:                 # Beam without its aws extra: no S3 at all
        return
    original = boto3_client.Client.__init__
    if getattr(original, 'shared_clients', False):
        return

    def __init__(self, options):
        if isinstance(options, PipelineOptions):
            view = options.view_as(S3Options)
            key = tuple(getattr(view, name, None) for name in _S3_OPTIONS)
        else:
            key = tuple(options.get(name) for name in _S3_OPTIONS)
        client = _S3_CLIENTS.get(key)
        if client is None:
            original(self, options)
            _S3_CLIENTS[key] = self.client
        else:
            self.client = client
            self._download_request = None
            self._download_stream = None
            self._download_pos = 0

    __init__.shared_clients = True
    boto3_client.Client.__init__ = __init__


# Beam's S3 filesystem, which the `beamcrawl` program loads only when a path names s3://
# (pipelines/cli.py); then its clients are shared once it is loaded (load_filesystems_on_demand).
_S3_FILESYSTEM = 'apache_beam.io.aws.s3filesystem'
_SHARING_CHECKED = False        # filesystems(): whether the S3 clients' sharing was put in place

if 'apache_beam' in sys.modules:       # on a worker, or a library user's process: at once
    filesystems()


def load_filesystems_on_demand(deferred: Dict[str, str]) -> None:
    """Once Beam is imported without the filesystems of `deferred` ({scheme: module}, marked
    absent in sys.modules by the `beamcrawl` program: their clients cost 0.11 s of every
    command's start): a filesystem is imported, and so known to Beam's FileSystems, when a path
    first names its scheme. Forked local workers inherit this."""
    if not deferred:
        return
    FileSystems = filesystems()
    for name in deferred.values():
        if sys.modules.get(name, 0) is None:
            del sys.modules[name]
    lookup = FileSystems.get_filesystem
    loading = threading.Lock()

    def get_filesystem(path):
        scheme = FileSystems.get_scheme(path) or ''
        if scheme in deferred:
            with loading:                       # another thread's path waits for the import
                name = deferred.get(scheme)
                if name is not None:
                    try:
                        importlib.import_module(name)
                    except ImportError:  # its client is not installed: Beam says so (ValueError)
                        pass
                    if name == _S3_FILESYSTEM:
                        _share_s3_clients()
                    del deferred[scheme]
        return lookup(path)
    FileSystems.get_filesystem = staticmethod(get_filesystem)


def _status(error) -> int:
    return int(error.response.get('ResponseMetadata', {}).get('HTTPStatusCode', 0) or 0)


# What a store's client raises, by name (its classes are imported only with the store), and
# what to tell the user: one line, no traceback (pipelines/cli.py).
_EXPLAINED = (
    ('NoCredentialsError', 'no S3 credentials: give --s3_access_key_id and --s3_secret_access_key '
                           '(or the AWS environment variables)'),
    ('EndpointConnectionError', 'the S3 endpoint does not answer: check --s3_endpoint_url (is '
                                'the store running? `beamcrawl s3 status`)'),
    ('NoSuchBucket', 'the bucket does not exist: create it first'),
    ('InvalidAccessKeyId', 'the S3 store does not know this access key: check '
                           '--s3_access_key_id'),
    ('SignatureDoesNotMatch', 'the S3 store refused the secret key: check '
                              '--s3_secret_access_key'),
    ('AccessDenied', 'the S3 store denied access with these credentials'),
    ('(403)', 'the S3 store denied access with these credentials (403 Forbidden)'),
    ('HdfsError', None),
)


def explain(error: BaseException) -> Optional[str]:
    """One line for an error of a store's client (S3, HDFS) in `error` or what caused it, or
    None when it is not one."""
    seen = 0
    while error is not None and seen < 10:
        text = f'{type(error).__name__}: {error}'
        for marker, message in _EXPLAINED:
            if marker in text:
                if message is None:             # HDFS: the NameNode's own words
                    return f'HDFS: {str(error).strip().splitlines()[0][:300]}'
                return message
        error = error.__cause__ or error.__context__
        seen += 1
    return None


def check_options(path: str, options) -> None:
    """Raises UserError when a path's filesystem lacks the options it needs (before anything is
    read: Beam's own messages are a traceback) or none is installed for its scheme."""
    from apache_beam.options.pipeline_options import HadoopFileSystemOptions

    from beamcrawl.transforms.base.errors import UserError
    scheme = path.split('://', 1)[0] if '://' in path else ''
    if scheme == 'hdfs':
        hdfs = options.view_as(HadoopFileSystemOptions)
        missing = [f'--{name}' for name in ('hdfs_host', 'hdfs_port', 'hdfs_user')
                   if getattr(hdfs, name) in (None, '')]
        if missing:
            raise UserError(f'{path}: an HDFS path needs {", ".join(missing)} (the NameNode\'s '
                            f'WebHDFS address and a user; `beamcrawl hdfs start` prints them)')
    if scheme and scheme not in ('file', 'hdfs', 's3'):
        raise UserError(f'{path}: beamcrawl keeps a crawl directory on a local path, hdfs:// or '
                        f's3://, not {scheme}://')


_STORES = {}


def store_for(path: str) -> Store:
    """The store of a path (one per filesystem and options: the stores hold clients)."""
    if '://' not in path:
        return _LOCAL
    from apache_beam.io.localfilesystem import LocalFileSystem
    FileSystems = filesystems()
    filesystem = FileSystems.get_filesystem(path)       # a new instance per call
    if isinstance(filesystem, LocalFileSystem):
        return _LOCAL
    options = FileSystems._pipeline_options             # pylint: disable=protected-access
    key = (filesystem.scheme(), id(options))
    entry = _STORES.get(key)
    if entry is None:
        if filesystem.scheme() == 'hdfs':
            store = HdfsStore(filesystem)
        elif filesystem.scheme() == 's3':
            store = S3Store(filesystem)
        else:
            raise OSError(f'{path}: beamcrawl has no commit protocol for the '
                          f'{filesystem.scheme()} filesystem (it has one for local paths, '
                          f'hdfs:// and s3://)')
        # the options are kept with the store: their id stays theirs while it is cached
        entry = _STORES[key] = (options, store)
    return entry[1]


_LOCAL = LocalStore()
