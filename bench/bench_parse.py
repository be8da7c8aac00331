"""Benchmark: `beamcrawl parse` on a segment of N generated pages (2-50 KB, 20-200 links).

Writes the pages as a fetched segment (content + crawl_fetch), runs the parse command on the
local runner and prints documents/s, MB/s and peak RSS.

    python bench/bench_parse.py [--pages 10000]
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from pages import pages  # noqa: E402

from beamcrawl.transforms.storage.partwriter import write_avro_file  # noqa: E402
from beamcrawl.transforms.storage.records import (CONTENT_SCHEMA, CRAWL_DATUM_SCHEMA, content,
                                                  crawl_datum)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--pages', type=int, default=10000)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix='bench-parse-')
    segment = os.path.join(work, 'crawl', 'segments', '20261122000000')
    docs = pages(args.pages)
    mb = sum(len(html) for html, _ in docs) / 1e6
    write_avro_file(os.path.join(segment, 'content', 'part-00000.avro'), CONTENT_SCHEMA, [
        content(url, content_bytes=html, content_type='text/html', fetch_time=0, http_code=200)
        for html, url in docs])
    write_avro_file(os.path.join(segment, 'crawl_fetch', 'part-00000.avro'), CRAWL_DATUM_SCHEMA,
                    [crawl_datum(url, 'fetch_success', fetch_time=0, fetch_interval=60)
                     for _, url in docs])
    runners = {'pinned local runner (1 process)': [],
               'local runner, 2 worker processes': ['--direct_num_workers=2',
                                                    '--direct_running_mode=multi_processing']}
    for label, extra in runners.items():
        for part in ('parse_text', 'parse_data', 'crawl_parse'):
            shutil.rmtree(os.path.join(segment, part), ignore_errors=True)
        start = time.time()
        proc = subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', 'parse',
                               os.path.join(work, 'crawl'), *extra], cwd=ROOT,
                              capture_output=True, text=True)
        wall = time.time() - start
        if proc.returncode != 0:
            print(proc.stderr[-2000:])
            sys.exit(1)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f'{label}: parse of {args.pages} pages ({mb:.0f} MB): {wall:.1f} s, '
              f'{args.pages / wall:.0f} documents/s, {mb / wall:.1f} MB/s, '
              f'peak RSS of any process so far {peak:.0f} MB')
        print('  ' + proc.stdout.strip())
    shutil.rmtree(work)


if __name__ == '__main__':
    main()
