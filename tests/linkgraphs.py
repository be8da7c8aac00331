"""Synthetic link graphs written as parsed segments of a crawl directory, for the LinkRank
tests and bench/bench_linkrank.py: every page is on its own host and domain, so that the
link.ignore.* rules keep every link and the graph stored is exactly the graph generated."""

import random
from typing import Dict, List

from beamcrawl.transforms.parse import FETCH_TIME_KEY
from beamcrawl.transforms.storage.fs import join
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.partwriter import write_avro_file
from beamcrawl.transforms.storage.records import (CRAWL_DATUM_SCHEMA, PARSE_DATA_SCHEMA,
                                                  crawl_datum, parse_data)

SEGMENT = '20261101000000'


def page(i: int) -> str:
    return f'http://p{i}.example{i}.com/'


def random_graph(nodes: int, out_degree: int, seed: int, dangling: int = 0, skew: float = 2.0
                 ) -> Dict[int, List[int]]:
    """{source: [targets]}: each node but the last `dangling` links to `out_degree` distinct
    others, chosen at random, the more so the lower their number when skew > 1 (a node with a
    low number gets many inlinks, as a home page)."""
    rng = random.Random(seed)
    graph = {}
    for i in range(nodes - dangling):
        targets = set()
        while len(targets) < min(out_degree, nodes - 1):
            j = int(nodes * rng.random() ** skew)
            if j != i:
                targets.add(j)
        graph[i] = sorted(targets)
    return graph


def write_segment(crawl_dir: str, graph: Dict[int, List[int]], *, segment: str = SEGMENT,
                  fetch_time: int = 1_790_000_000_000, parts: int = 4) -> str:
    """The graph as one parsed segment (parse_data and crawl_parse parts) of crawl_dir."""
    layout = CrawlLayout(crawl_dir)
    records = [parse_data(page(i), title='', parse_status='success',
                          outlinks=[(page(j), f'to {j}') for j in targets],
                          metadata={FETCH_TIME_KEY: str(fetch_time)})
               for i, targets in sorted(graph.items())]
    for p in range(parts):
        write_avro_file(join(layout.segment_part(segment, 'parse_data'), f'part-{p:05d}.avro'),
                        PARSE_DATA_SCHEMA, records[p::parts])
    write_avro_file(join(layout.segment_part(segment, 'crawl_parse'), 'part-00000.avro'),
                    CRAWL_DATUM_SCHEMA, [crawl_datum(page(i), 'linked', fetch_time=fetch_time,
                                                     fetch_interval=86400) for i in graph])
    return segment
