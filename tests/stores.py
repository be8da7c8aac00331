"""The stores a crawl directory can live on, for tests: a local folder, a real HDFS (the
MiniDFSCluster of `beamcrawl hdfs`) and a real S3-compatible store (SeaweedFS of `beamcrawl s3`),
each started once per test process on free ports in a home of its own (their builds shared:
.hdfs/ beside the source tree, the user's cache for SeaweedFS) and stopped at the end.

    from tests.stores import store            # parametrized: local, hdfs, s3
    def test_x(store):  store.root ('/tmp/..', 'hdfs://t-..', 's3://crawl/t-..'), store.options

`store.use()` gives this process's Beam FileSystems the store's options (what a command does
with its command line), so the storage layer reaches it from the test too.
"""

import os
import random
import socket
import uuid
from typing import List, NamedTuple

import pytest

from tests.conftest import ROOT

__all__ = ['Store', 'store', 'hdfs_store', 's3_store', 'free_port_pairs', 'STORE_TESTS']

# Every test of a crawl directory on a real store runs on one xdist worker (one HDFS, one S3
# per process), beside the other tests.
STORE_TESTS = [pytest.mark.e2e, pytest.mark.xdist_group('stores')]


class Store(NamedTuple):
    name: str
    root: str                   # a fresh directory of this test on the store
    options: List[str]          # the Beam options that reach it

    def use(self) -> None:
        from beamcrawl.transforms.runners.runtime import use_filesystem_options
        use_filesystem_options(self.options)

    def path(self, *parts: str) -> str:
        return '/'.join([self.root.rstrip('/'), *parts])


def free_port_pairs(count: int, offset: int = 0) -> List[int]:
    """`count` ports free on loopback when chosen (with port + offset free too, when offset)."""
    rng, held, chosen = random.Random(), [], []
    try:
        while len(chosen) < count:
            port = rng.randrange(20000, 65535 - offset)
            pair = []
            try:
                for number in {port, port + offset}:
                    s = socket.socket()
                    pair.append(s)
                    s.bind(('127.0.0.1', number))
            except OSError:
                for s in pair:
                    s.close()
                continue
            held += pair
            chosen.append(port)
        return chosen
    finally:
        for s in held:
            s.close()


@pytest.fixture(scope='session')
def hdfs_store(tmp_path_factory):
    """A real HDFS for the test session: (its Beam options)."""
    from beamcrawl.transforms.runners.localhdfs import LocalHdfs
    built = LocalHdfs(os.path.join(ROOT, '.hdfs'))
    built.prepare()
    home = tmp_path_factory.mktemp('hdfs-store') / 'home'
    os.makedirs(home)
    os.symlink(built.build_dir, os.path.join(home, 'minicluster'))
    rpc, http = free_port_pairs(2)
    hdfs = LocalHdfs(str(home), ports={'rpc': rpc, 'http': http})
    hdfs.start()
    yield hdfs.options()
    hdfs.stop()


@pytest.fixture(scope='session')
def s3_store(tmp_path_factory):
    """A real S3-compatible store (SeaweedFS) for the test session: (its Beam options)."""
    from beamcrawl.transforms.runners.locals3 import GRPC_OFFSET, PORTS, LocalS3
    home = str(tmp_path_factory.mktemp('s3-store'))
    ports = dict(zip(PORTS, free_port_pairs(len(PORTS), GRPC_OFFSET)))
    s3 = LocalS3(home, ports=ports)
    s3.start()
    yield s3.options()
    s3.stop()


@pytest.fixture(params=['local', 'hdfs', 's3'])
def store(request, tmp_path):
    """A fresh directory on each store (and the Beam options that reach it), in use."""
    name = uuid.uuid4().hex[:10]
    if request.param == 'local':
        found = Store('local', str(tmp_path / name), [])
    elif request.param == 'hdfs':
        found = Store('hdfs', f'hdfs://tests/{name}', request.getfixturevalue('hdfs_store'))
    else:
        found = Store('s3', f's3://crawl/tests/{name}', request.getfixturevalue('s3_store'))
    found.use()
    return found
