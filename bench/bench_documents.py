"""Benchmark: parse throughput per document format (policy/documents.py, through
parse_document as the parse stage calls it), on the test corpus (tests/documents_corpus/: one
document of each format), each parsed --repeat times, best of --runs; one line per format.

    python bench/bench_documents.py [--repeat 50] [--runs 3]
"""

import argparse
import glob
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from beamcrawl.transforms.policy.html import parse_document  # noqa: E402
from tests.test_documents import CORPUS, MIME  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeat', type=int, default=50)
    parser.add_argument('--runs', type=int, default=3)
    args = parser.parse_args()
    print(f'{"format":8s} {"size":>9s} {"docs/s":>9s} {"MB/s":>7s}  status')
    for path in sorted(glob.glob(os.path.join(CORPUS, '*.json'))):
        with open(path, encoding='utf-8') as f:
            fmt = json.load(f)['format']
        with open(path[:-len('.json')], 'rb') as f:
            body = f.read()
        best, status = float('inf'), ''
        for _ in range(args.runs):
            start = time.perf_counter()
            for _ in range(args.repeat):
                status = parse_document(body, 'http://bench.test/doc', MIME[fmt],
                                        max_expanded=64 << 20).status
            best = min(best, time.perf_counter() - start)
        rate = args.repeat / best
        print(f'{fmt:8s} {len(body):9d} {rate:9.0f} {rate * len(body) / 1e6:7.1f}  {status}')


if __name__ == '__main__':
    main()
