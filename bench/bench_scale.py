"""Benchmark: the figures of the scaling model (docs/scaling.md). Per batch stage, store and runner:
records per CPU-second, bytes moved, files and objects created; Flink's fixed cost per stage;
the two designs of the batch engine's spill files on each store; and the driver's cut of a
crawldb into work units (block headers read in one process).

    python bench/bench_scale.py [--urls 200000] [--stores local,hdfs,s3]
                                [--runners local,flink-p1,flink-p2] [--stages ...]
                                [--spill-units 24 --spill-partitions 32] [--markdown]

(--stages '' measures only the fixed costs, the unit scan and the spills; --spill-units 0
leaves out the spills.)

It starts what it measures itself, on free ports, in homes of its own: a real HDFS (the build
in .hdfs/), a real S3-compatible store (SeaweedFS, built once per user) and a local Flink cluster
(the build in .flink/; one TaskManager of 2 slots, run at --parallelism 1 and 2), and stops them
at the end. The workloads are bench_batch.py's, built once on the local disk and copied to each
store before every run (each store's own layout: CURRENT and _published on S3).

CPU is the user + system time of every process that did the work: the command and its children,
Flink's processes and the SDK workers (their counters in /proc before and after), and,
separately, the store's own process (the NameNode and DataNode, or SeaweedFS). Bytes read are
the stage's inputs plus the spill files read back; bytes written its outputs plus the spills
(from the stage's store.* counters, which the command logs). Objects are the files a stage
created, spills included (removed when the stage ends).
"""

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import bench_batch  # noqa: E402
from measure import ROOT, beamcrawl, measure  # noqa: E402

STAGES = ('inject', 'generate', 'updatedb', 'invertlinks')
RUNNERS = ('local', 'flink-p1', 'flink-p2')
STORES = ('local', 'hdfs', 's3')
_TICK = os.sysconf('SC_CLK_TCK')


# -- processes and their CPU -------------------------------------------------------------------

def _children(pid):
    try:
        with open(f'/proc/{pid}/task/{pid}/children') as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def tree_cpu(pids):
    """CPU seconds of the processes `pids` and all their descendants, with the children they
    reaped (utime + stime + cutime + cstime)."""
    total, stack, seen = 0, list(pids), set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f'/proc/{pid}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
            total += sum(int(x) for x in fields[11:15])
        except (OSError, IndexError, ValueError):
            continue
        stack.extend(_children(pid))
    return total / _TICK


def free_ports(count, offset=0):
    chosen, held = [], []
    rng = random.Random()
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


# -- the services --------------------------------------------------------------------------------

class Services:
    """What the bench starts: {store: (prefix, options, pids of its process)}, a Flink cluster."""

    def __init__(self, work, stores, runners):
        self.work, self.stores, self.flink = work, {'local': (os.path.join(work, 'on'), [],
                                                              lambda: [])}, None
        if 'hdfs' in stores:
            from beamcrawl.transforms.runners.localhdfs import LocalHdfs
            built = LocalHdfs(os.path.join(ROOT, '.hdfs'))
            built.prepare()
            home = os.path.join(work, 'hdfs-home')
            os.makedirs(home)
            os.symlink(built.build_dir, os.path.join(home, 'minicluster'))
            self.hdfs = LocalHdfs(home, ports=dict(zip(('rpc', 'http'), free_ports(2))))
            self.hdfs.start()
            self.stores['hdfs'] = (f'hdfs://bench-{uuid.uuid4().hex[:6]}', self.hdfs.options(),
                                   lambda: [self.hdfs.pid()])
        if 's3' in stores:
            from beamcrawl.transforms.runners.locals3 import GRPC_OFFSET, PORTS, LocalS3
            self.s3 = LocalS3(os.path.join(work, 's3-home'),
                              ports=dict(zip(PORTS, free_ports(len(PORTS), GRPC_OFFSET))))
            self.s3.start()
            self.stores['s3'] = (f's3://crawl/bench-{uuid.uuid4().hex[:6]}', self.s3.options(),
                                 lambda: [self.s3.pid()])
        if any(r.startswith('flink') for r in runners):
            from beamcrawl.transforms.runners.localflink import PORTS, LocalFlink
            built = LocalFlink(os.path.join(ROOT, '.flink'))
            built.prepare()
            home = os.path.join(ROOT, '.flink', 'bench', uuid.uuid4().hex[:6])
            os.makedirs(home)
            for part in (built.build.build_dir, built.flink_home, built.build.downloads):
                os.symlink(part, os.path.join(home, os.path.basename(part)))
            self.flink = LocalFlink(home, ports=dict(zip(PORTS, free_ports(len(PORTS)))))
            self.flink.start()

    def runner_options(self, runner):
        if runner == 'local':
            return []
        return [*self.flink.options(), '--parallelism', runner.rsplit('p', 1)[1]]

    def cluster_pids(self):
        if self.flink is None:
            return []
        return [p for pids in self.flink.pids().values() for p in pids]

    def stop(self):
        if self.flink is not None:
            self.flink.stop()
            shutil.rmtree(self.flink.home, ignore_errors=True)
        for name in ('hdfs', 's3'):
            if name in self.stores:
                getattr(self, name).stop()


# -- crawl directories on a store ------------------------------------------------------------------

def copy_crawl(local, target):
    """Copies a crawl directory built on the local disk to `target` in the store's own layout:
    on S3, each database as version-bench/ named by CURRENT, each segment part with its
    _published marker."""
    from beamcrawl.transforms.storage import fs
    renames = fs.renames(target)
    for directory, _, files in os.walk(local):
        rel = os.path.relpath(directory, local)
        parts = [] if rel == '.' else rel.split(os.sep)
        if not renames and len(parts) >= 2 and parts[0] in ('crawldb', 'linkdb') and \
                parts[1] == 'current':
            parts[1] = 'version-bench'
        for name in files:
            with open(os.path.join(directory, name), 'rb') as src, \
                    fs.create(fs.join(target, *parts, name)) as dst:
                shutil.copyfileobj(src, dst, 8 << 20)
        if not renames and len(parts) == 3 and parts[0] == 'segments':
            fs.write_file(fs.join(target, *parts, fs.PUBLISHED), b'', replace=True)
    if not renames:
        for db in ('crawldb', 'linkdb'):
            if os.path.isdir(os.path.join(local, db, 'current')):
                fs.write_file(fs.join(target, db, 'CURRENT'),
                              json.dumps({'current': 'version-bench'}).encode(), replace=True)


def listing(target):
    """(files, bytes) under a directory of any store."""
    from beamcrawl.transforms.storage import fs
    store = fs.store(target)
    if fs.is_local(target):
        count = size = 0
        for directory, _, files in os.walk(target):
            for name in files:
                count += 1
                size += os.path.getsize(os.path.join(directory, name))
        return count, size
    if target.startswith('hdfs://'):
        summary = store.client.content(store._path(target), strict=False)  # noqa: SLF001
        return (summary['fileCount'], summary['length']) if summary else (0, 0)
    bucket, key = store._bucket_key(target)                               # noqa: SLF001
    count = size = 0
    for page in store.client.get_paginator('list_objects_v2').paginate(
            Bucket=bucket, Prefix=key.rstrip('/') + '/'):
        for item in page.get('Contents', ()):
            if not item['Key'].endswith('/'):
                count += 1
                size += item['Size']
    return count, size


def counters(stderr):
    out = {}
    for line in stderr.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1] == 'INFO' and parts[3].isdigit() and '.' in parts[2]:
            out[parts[2]] = out.get(parts[2], 0) + int(parts[3])
    return out


# -- one stage ------------------------------------------------------------------------------------

def run_stage(services, store, runner, stage, pristine, records):
    from beamcrawl.transforms.runners.runtime import use_filesystem_options
    from beamcrawl.transforms.storage import fs
    prefix, options, store_pids = services.stores[store]
    use_filesystem_options(options)
    target = fs.join(prefix, f'{stage}-{runner}-{uuid.uuid4().hex[:6]}')
    copy_crawl(os.path.join(pristine, 'crawl'), fs.join(target, 'crawl'))
    if stage == 'inject':
        with open(os.path.join(pristine, 'seeds.txt'), 'rb') as f:
            fs.write_file(fs.join(target, 'seeds.txt'), f.read(), replace=True)
    before = listing(target)
    argv = bench_batch.command(stage, target, [*options, *services.runner_options(runner)])
    cluster_before = tree_cpu(services.cluster_pids())
    store_before = tree_cpu([p for p in store_pids() if p])
    result = measure(f'{stage} {store} {runner}', argv, records)
    cluster = tree_cpu(services.cluster_pids()) - cluster_before
    store_cpu = tree_cpu([p for p in store_pids() if p]) - store_before
    after = listing(target)
    found = counters(result.stderr)
    spills = found.get('store.spill_files', 0)
    spill_bytes = found.get('store.spill_bytes', 0)
    row = {'stage': stage, 'store': store, 'runner': runner, 'records': records,
           'wall': result.wall, 'cpu': result.cpu + cluster, 'store_cpu': store_cpu,
           'read': before[1] + spill_bytes, 'written': max(after[1] - before[1], 0) + spill_bytes,
           'objects': max(after[0] - before[0], 0) + spills, 'spills': spills,
           'parts': found.get('store.parts_written', 0)}
    fs.delete(target)
    return row


def fixed_cost(services, store, runner, work):
    """The wall and CPU time (the command's and the cluster's) of a stage with almost nothing
    to do: inject of 10 seeds. A stage's marginal cost is its figures less these."""
    from beamcrawl.transforms.runners.runtime import use_filesystem_options
    from beamcrawl.transforms.storage import fs
    prefix, options, _ = services.stores[store]
    use_filesystem_options(options)
    seeds = os.path.join(work, 'ten-seeds.txt')
    with open(seeds, 'w') as f:
        f.write(''.join(f'http://h{i}.example.com/\n' for i in range(10)))
    target = fs.join(prefix, f'fixed-{runner}-{uuid.uuid4().hex[:6]}')
    cluster_before = tree_cpu(services.cluster_pids())
    result = measure(f'fixed {store} {runner}',
                     beamcrawl('inject', target, seeds, '--now', bench_batch.NOW, *options,
                               *services.runner_options(runner)))
    cluster = tree_cpu(services.cluster_pids()) - cluster_before
    fs.delete(target)
    return result.wall, result.cpu + cluster


# -- the driver's cut of a database into work units ------------------------------------------------

def unit_scan(services, store, pristine):
    """The driver's cut of a crawldb into work units (engine/units.py: every block header read
    in one process, before any worker starts): (seconds, records, blocks, bytes of the parts)."""
    from beamcrawl.transforms.engine.units import RECORDS_PER_UNIT, avro_units
    from beamcrawl.transforms.runners.runtime import use_filesystem_options
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA
    prefix, options, _ = services.stores[store]
    use_filesystem_options(options)
    target = fs.join(prefix, f'scan-{uuid.uuid4().hex[:6]}')
    copy_crawl(os.path.join(pristine, 'crawl'), fs.join(target, 'crawl'))
    parts = CrawlLayout(fs.join(target, 'crawl')).crawldb.part_files()
    start = time.perf_counter()
    units = avro_units([('crawldb', p) for p in parts], schema=CRAWL_DATUM_SCHEMA,
                       per_unit=RECORDS_PER_UNIT)
    took = time.perf_counter() - start
    size = listing(fs.join(target, 'crawl', 'crawldb'))[1]
    fs.delete(target)
    return took, sum(u.records for u in units), sum(len(u.blocks or ()) for u in units), size


# -- the spill files: one per unit and partition, or one per unit -----------------------------------

def spill_designs(services, store, units, partitions, unit_bytes):
    """Writes `units` map outputs of `unit_bytes` split over `partitions`, then reads them back
    partition by partition, in each design; returns {design: (write s, read s, objects)}."""
    from beamcrawl.transforms.runners.runtime import use_filesystem_options
    from beamcrawl.transforms.storage import fs
    prefix, options, _ = services.stores[store]
    use_filesystem_options(options)
    piece = os.urandom(max(unit_bytes // partitions, 1))
    out = {}
    for design in ('file per unit and partition', 'file per unit'):
        base = fs.join(prefix, f'spills-{uuid.uuid4().hex[:6]}')
        start = time.perf_counter()
        spans = {}
        for u in range(units):
            if design == 'file per unit':
                path = fs.join(base, f'u{u:06d}.spill')
                with fs.create(path) as f:
                    for p in range(partitions):
                        f.write(piece)
                        spans[u, p] = (path, p * len(piece), len(piece))
            else:
                for p in range(partitions):
                    path = fs.join(base, f'u{u:06d}-p{p:05d}.pickle')
                    with fs.create(path) as f:
                        f.write(piece)
                    spans[u, p] = (path, 0, len(piece))
        wrote = time.perf_counter() - start
        start = time.perf_counter()
        for p in range(partitions):
            for u in range(units):
                path, offset, length = spans[u, p]
                if design == 'file per unit':
                    data = fs.store(path).read_range(path, offset, length)
                else:
                    with fs.open_read(path) as f:
                        data = f.read(length)
                assert len(data) == length
        read = time.perf_counter() - start
        out[design] = (wrote, read, listing(base)[0])
        fs.delete(base)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--urls', type=int, default=200000)
    parser.add_argument('--stores', default=','.join(STORES))
    parser.add_argument('--runners', default=','.join(RUNNERS))
    parser.add_argument('--stages', default=','.join(STAGES))
    parser.add_argument('--spill-units', type=int, default=24)
    parser.add_argument('--spill-partitions', type=int, default=32)
    parser.add_argument('--spill-unit-bytes', type=int, default=4 << 20)
    parser.add_argument('--markdown', action='store_true')
    args = parser.parse_args()
    stores = [s for s in args.stores.split(',') if s]
    runners = [r for r in args.runners.split(',') if r]
    stages = [s for s in args.stages.split(',') if s]
    work = tempfile.mkdtemp(prefix='bench-scale-')
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip() or '?'
    print(f'{os.cpu_count()} cores, commit {commit}, {args.urls} URLs')
    services = Services(work, stores, runners)
    rows, fixed, spills = [], {}, {}
    try:
        for stage in stages:
            pristine = os.path.join(work, 'pristine', stage)
            os.makedirs(pristine)
            records = getattr(bench_batch, f'build_{stage}')(pristine, args.urls)
            for store in stores:
                for runner in runners:
                    row = run_stage(services, store, runner, stage, pristine, records)
                    rows.append(row)
                    print(f'{stage:<12} {store:<6} {runner:<9} {row["wall"]:6.1f} s wall '
                          f'{row["cpu"]:6.1f} s CPU ({row["store_cpu"]:5.1f} s store) '
                          f'{records / max(row["cpu"], 1e-9):8.0f} rec/CPU-s  '
                          f'read {row["read"] / 2 ** 20:7.1f} MiB  written '
                          f'{row["written"] / 2 ** 20:7.1f} MiB  {row["objects"]:5d} objects '
                          f'({row["spills"]} spills, {row["parts"]} parts)', flush=True)
        for store in stores:
            for runner in runners:
                wall, cpu = fixed[store, runner] = fixed_cost(services, store, runner, work)
                print(f'fixed cost   {store:<6} {runner:<9} {wall:6.1f} s wall {cpu:6.1f} s CPU '
                      f'(inject of 10 seeds)', flush=True)
        scan_from = os.path.join(work, 'pristine', 'generate')
        if not os.path.isdir(scan_from):
            os.makedirs(scan_from)
            bench_batch.build_generate(scan_from, args.urls)
        for store in stores:
            took, records, blocks, size = unit_scan(services, store, scan_from)
            print(f'unit scan    {store:<6} {took:6.2f} s for {records} records in {blocks} '
                  f'blocks, {size / 2 ** 20:.1f} MiB of parts ({records / took:.0f} records/s '
                  f'in the driver)', flush=True)
        for store in stores if args.spill_units > 0 else ():
            spills[store] = spill_designs(services, store, args.spill_units,
                                          args.spill_partitions, args.spill_unit_bytes)
            for design, (wrote, read, objects) in spills[store].items():
                print(f'spills       {store:<6} {design:<28} write {wrote:6.2f} s  read '
                      f'{read:6.2f} s  {objects} objects ({args.spill_units} units x '
                      f'{args.spill_partitions} partitions, '
                      f'{args.spill_unit_bytes >> 20} MiB a unit)', flush=True)
    finally:
        services.stop()
        shutil.rmtree(work, ignore_errors=True)
    if args.markdown:
        print('\n| stage | store | runner | wall s | CPU s | store CPU s | records/CPU-s | '
              'beyond the fixed cost | read MiB | written MiB | objects (spills) |')
        print('|---|---|---|---|---|---|---|---|---|---|---|')
        for r in rows:
            extra = r['cpu'] - fixed.get((r['store'], r['runner']), (0, 0))[1]
            marginal = f'{r["records"] / extra:.0f}' if extra > 0 else '-'
            print(f'| {r["stage"]} | {r["store"]} | {r["runner"]} | {r["wall"]:.1f} | '
                  f'{r["cpu"]:.1f} | {r["store_cpu"]:.1f} | {r["records"] / r["cpu"]:.0f} | '
                  f'{marginal} | '
                  f'{r["read"] / 2 ** 20:.0f} | {r["written"] / 2 ** 20:.0f} | '
                  f'{r["objects"]} ({r["spills"]}) |')


if __name__ == '__main__':
    main()
