"""The commit protocol on each store (storage/stores.py, storage/fs.py, docs/crawl-dir.md
"Stores"): the same checks on a local folder, a real HDFS and a real S3-compatible store."""

import json
import os
import socket
import time

import pytest

from beamcrawl.transforms.base.errors import LockedError
from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.databases import DbLayout, DbUpdate
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.locks import Lock
from beamcrawl.transforms.storage.parts import iter_records
from beamcrawl.transforms.storage.partwriter import PartWriter, write_avro_file
from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA, crawl_datum
from beamcrawl.transforms.storage.stores import store_for
from tests.stores import STORE_TESTS, hdfs_store, s3_store, store  # noqa: F401  (fixtures)

pytestmark = STORE_TESTS


def datum(url):
    return crawl_datum(url, 'db_unfetched', fetch_time=0, fetch_interval=86400)


def test_small_files_exclusive_create_replace_and_conditional_replace(store):
    target, path = store_for(store.root), store.path('a', 'note')
    assert target.read(path) is None
    assert target.create_exclusive(path, b'one')
    assert not target.create_exclusive(path, b'two')          # another writer was first
    data, version = target.read(path)
    assert data == b'one'
    target.replace(path, b'three')
    assert target.read(path)[0] == b'three'
    assert not target.replace_if(path, b'four', version)      # changed since it was read
    assert target.replace_if(path, b'four', target.read(path)[1])
    assert fs.read_file(path) == b'four'
    assert not fs.write_file(path, b'five', replace=False)
    assert fs.write_file(path, b'five', replace=True) and fs.read_file(path) == b'five'


def test_directories_listing_globs_and_deletes(store):
    for name in ('d/run-a/x.c.avro', 'd/run-b/y.c.avro', 'd/run-b/z.other', 'd/run-c.committed',
                 'd/e/f/g'):
        fs.write_file(store.path(name), b'x', replace=True)
    assert fs.exists(store.path('d')) and fs.exists(store.path('d', 'e', 'f'))
    assert not fs.exists(store.path('nothing'))
    assert fs.entries(store.path('d')) == ['e', 'run-a', 'run-b', 'run-c.committed']
    assert fs.list_files(store.path('d', 'run-*', '*.c.avro')) == [
        store.path('d', 'run-a', 'x.c.avro'), store.path('d', 'run-b', 'y.c.avro')]
    assert fs.list_files(store.path('absent', '*.avro')) == []
    assert fs.list_files(store.path('d', 'run-c.committed', '*.avro')) == []
    fs.delete(store.path('d', 'e'))
    assert fs.entries(store.path('d')) == ['run-a', 'run-b', 'run-c.committed']
    fs.delete(store.path('d'))
    assert not fs.exists(store.path('d')) and fs.entries(store.root) == []
    fs.delete(store.path('d'))                                  # absent: no error


@pytest.mark.parametrize('size', [0, 100, 9 << 20])
def test_a_created_file_appears_whole(store, size):
    path = store.path('big', 'f.bin')
    data = os.urandom(size)
    with fs.create(path) as f:
        for start in range(0, size, 1 << 20):
            f.write(data[start:start + (1 << 20)])
        f.write(b'')
    with fs.open_read(path) as f:
        assert fs.read_all(f) == data
    assert store_for(path).read_range(path, 3, 10) == data[3:13]
    with fs.create(path) as f:                                  # replaced
        f.write(b'again')
    assert fs.read_file(path) == b'again'


def test_a_part_is_published_whole(store):
    directory = store.path('part')
    records = [datum(f'http://h.test/{i}') for i in range(2000)]
    write_avro_file(fs.part_file(directory, 0), CRAWL_DATUM_SCHEMA, records)
    assert [r['url'] for r in iter_records([fs.part_file(directory, 0)])] == \
        [r['url'] for r in records]
    with pytest.raises(RuntimeError):
        with PartWriter(fs.part_file(directory, 1), CRAWL_DATUM_SCHEMA) as out:
            out.write(records[0])
            raise RuntimeError('the writer fails')
    assert fs.list_files(fs.join(directory, 'part-*.avro')) == [fs.part_file(directory, 0)]


def test_a_directory_is_published_by_a_rename_or_a_marker(store):
    final = store.path('seg', 'crawl_fetch')
    written = fs.written_dir(final, store.path('seg', '.tmp-crawl_fetch'))
    assert (written == final) is (store.name == 's3')
    fs.write_file(fs.join(written, 'part-00000.avro'), b'x', replace=True)
    assert not fs.is_published(final)
    fs.publish_dir(written, final)
    assert fs.is_published(final)
    fs.publish_dir(written, final)                              # again: nothing to do
    assert fs.read_file(fs.join(final, 'part-00000.avro')) == b'x'


def test_a_lock_is_exclusive_names_its_holder_and_is_released(store):
    path = store.path('db', '.locked')
    with Lock(path, 'updatedb'):
        with pytest.raises(LockedError) as refused:
            Lock(path, 'generate', 'another update of the crawldb').acquire()
        assert 'another update of the crawldb is running' in str(refused.value)
        assert 'command=updatedb' in str(refused.value) and 'token=' not in str(refused.value)
    assert not fs.exists(path)
    with Lock(path, 'again'):
        pass


def _holder(pid, host, expires):
    return (f'pid={pid} host={host} user=someone since=2026-11-24T00:00:00+00:00 '
            f'command=updatedb expires={expires:.0f} token=x\n').encode()


def test_a_lock_is_taken_over_from_a_dead_local_process_or_after_its_lease(store):
    path = store.path('db', '.locked')
    dead = os.getpid() + 1_000_000                              # no such process
    fs.write_file(path, _holder(dead, socket.gethostname(), time.time() + 3600), replace=True)
    with Lock(path, 'updatedb'):                                # a killed run of this host
        pass
    elsewhere = 'another-host.invalid'
    fs.write_file(path, _holder(1, elsewhere, time.time() + 3600), replace=True)
    with pytest.raises(LockedError):                            # alive as far as we know
        Lock(path, 'updatedb').acquire()
    fs.write_file(path, _holder(1, elsewhere, time.time() - 1), replace=True)
    if store.name == 'local':                                   # one host: no lease
        with pytest.raises(LockedError):
            Lock(path, 'updatedb').acquire()
    else:
        with Lock(path, 'updatedb'):                            # its lease ran out
            assert b'another-host' not in fs.read_file(path)


def _version(db: DbLayout, label: str) -> str:
    directory = db.new_version_dir()
    write_avro_file(fs.part_file(directory, 0), CRAWL_DATUM_SCHEMA,
                    [datum(f'http://{label}.test/')])
    DbUpdate(directory).write_applied([label])
    return directory


@pytest.mark.parametrize('keep', [True, False])
def test_database_versions_install_and_recover(store, keep):
    db = DbLayout(store.path('crawldb'), 'crawldb')
    assert db.readable_dir() is None and db.part_files() == []
    for label in ('v1', 'v2'):
        with db.update(keep_backup=keep, command='test') as update:
            write_avro_file(fs.part_file(update.dir, 0), CRAWL_DATUM_SCHEMA,
                            [datum(f'http://{label}.test/')])
            update.write_applied([label])
    assert db.applied_segments() == ['v2']
    assert [r['url'] for r in iter_records(db.part_files())] == ['http://v2.test/']
    versions = db.version_dirs()
    assert len([d for d in versions if fs.exists(d)]) == (2 if keep else 1)
    abandoned = _version(db, 'v3')                              # a killed run's version
    with db.update(keep_backup=keep, command='test') as update:
        assert not fs.exists(abandoned)                         # removed under the lock
        update.discard()
    assert db.applied_segments() == ['v2']
    if store.name == 's3':
        pointer = json.loads(fs.read_file(db.pointer))
        assert pointer['current'].startswith('version-') and ('old' in pointer) is keep
        assert not fs.exists(db.current)                        # no current/ on S3


def test_a_crawl_layout_on_each_store(store):
    crawl = CrawlLayout(store.root)
    crawl.refuse_foreign()                                      # nothing there yet
    with crawl.segment_update('20261122000000', ['crawl_generate'], 'generate') as update:
        write_avro_file(fs.part_file(update.tmp['crawl_generate'], 0), CRAWL_DATUM_SCHEMA,
                        [datum('http://a.test/')])
        assert not crawl.has_part('20261122000000', 'crawl_generate')
    assert crawl.segment_names() == ['20261122000000']
    assert crawl.has_part('20261122000000', 'crawl_generate')
    assert len(crawl.part_files('20261122000000', 'crawl_generate')) == 1
    crawl.refuse_foreign()
