"""Index parsed pages into searchable documents (Nutch's `index`).

beamcrawl index CRAWL_DIR [SEGMENT ...] [--format tantivy|jsonl] [--output DIR] [--no-dedup]
                [--conf FILE] [-D key=value] [beam options]
Joins by URL the crawldb, the linkdb and the newest parse of each URL in the segments (default:
every parsed segment not indexed yet), after marking duplicates (`dedup`, unless --no-dedup).
Fetched pages become documents; gone pages, redirects and duplicates are deleted.
tantivy (default): updates the shards CRAWL_DIR/index/shard-NNNNN/ (indexer.shards of them).
jsonl: writes documents (OUT/part-*.jsonl) and deletions (OUT/deletions-*.jsonl) for Solr,
OpenSearch or Elasticsearch (README, "Indexing and search").
"""

import json
import logging
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError

log = logging.getLogger('beamcrawl')


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('segments', metavar='SEGMENT', nargs='*',
                        help='segment names or paths (default: parsed, not indexed yet)')
    parser.add_argument('--format', choices=('tantivy', 'jsonl'), default='tantivy')
    parser.add_argument('--output', metavar='DIR', help='jsonl: the output directory')
    parser.add_argument('--no-dedup', action='store_true', help='do not run dedup first')


def run(args, cfg, now, beam_args):
    from beamcrawl.pipelines.dedup import mark_duplicates
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.index import IndexEntries
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.segments import CRAWL_PARSE
    crawl = CrawlLayout(args.crawl_dir)
    if crawl.crawldb.readable_dir() is None:
        raise UserError(f'{crawl.crawldb.current}: no crawldb (run inject first)')
    if args.format == 'jsonl' and not args.output:
        raise UserError('--format jsonl needs --output DIR')
    if args.output and fs.exists(args.output):
        raise UserError(f'--output {args.output}: already exists')
    shards = cfg['indexer.shards']
    indexed = set((crawl.index_note(crawl.INDEXED) or '').split())
    names, _ = crawl.segments_to_apply([] if args.format == 'jsonl' else sorted(indexed),
                                       args.segments, CRAWL_PARSE)
    if not names:
        print('index: nothing to do (every parsed segment is indexed already)',
              file=sys.stderr)
        return 1
    if not args.no_dedup:
        mark_duplicates(crawl, cfg, beam_args)
    rules = settings.index_rules(cfg)
    if args.format == 'jsonl':
        return _jsonl(crawl, names, rules, shards, args.output, cfg, beam_args)
    counters = write_shards(crawl, cfg, beam_args, shards, 'index', lambda p: p | (
        'IndexEntries' >> IndexEntries(crawl=crawl, segments=names, rules=rules, shards=shards)),
        {crawl.INDEXED: ''.join(f'{n}\n' for n in sorted(indexed | set(names)))})
    _report(counters, f'indexed {", ".join(names)} into {crawl.index}')
    return 0


def write_shards(crawl, cfg, beam_args, shards, what, make_entries, notes):
    """Runs a pipeline whose entries (`make_entries(pipeline)`: (shard, (DOC, doc) | (DELETE,
    url))) update the index's Tantivy shards, each written aside, then installs them with
    `notes` under the index lock (index and clean). Returns the pipeline's counters."""
    import apache_beam as beam
    from apache_beam.io.filesystems import FileSystems

    from beamcrawl.transforms.index import WriteIndexShards
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    from beamcrawl.transforms.storage import fs
    from beamcrawl.transforms.storage.indexdir import write_shard
    from beamcrawl.transforms.storage.shards import update_shard
    with crawl.index_lock(what):
        crawl.recover_index()
        present = crawl.index_shard_dirs()
        recorded = crawl.index_note(crawl.SHARDS)
        if present and recorded is not None and int(recorded) != shards:
            raise UserError(f'{crawl.index} has {recorded} shards and indexer.shards is '
                            f'{shards}: remove {crawl.index} to rebuild the index with {shards}')
        scratch = crawl.scratch_dir(what)
        p = make_pipeline(beam_args, cfg)
        _ = (make_entries(p)
             | 'WriteShards' >> WriteIndexShards(
                 old_shards=present,
                 new_dir=crawl.new_shard_dir)
             | 'Written' >> beam.combiners.ToList()
             | 'Note' >> beam.Map(_note, FileSystems.join(scratch, 'written.json')))
        try:
            counters = run_pipeline(p, what)
            with FileSystems.open(FileSystems.join(scratch, 'written.json')) as f:
                written = {int(k): v for k, v in json.load(f).items()}
        finally:
            fs.delete(scratch)
        for number in range(shards):          # a new index gets every shard, empty or not
            if number not in written and number not in present:
                written[number] = crawl.new_shard_dir(number)
                write_shard(update_shard, None, written[number], [], [])
        crawl.install_shards(written, {**notes, crawl.SHARDS: str(shards)})
    return counters


def _note(written, path):
    from beamcrawl.transforms.storage import fs
    with fs.create(path) as f:
        f.write(json.dumps({str(shard): directory for shard, directory in written}).encode())
    return path


def _jsonl(crawl, names, rules, shards, output, cfg, beam_args):
    from beamcrawl.transforms.index import IndexEntries, WriteJsonLines
    from beamcrawl.transforms.runners.runtime import make_pipeline, run_pipeline
    p = make_pipeline(beam_args, cfg)
    _ = (p
         | 'IndexEntries' >> IndexEntries(crawl=crawl, segments=names, rules=rules, shards=shards)
         | 'WriteJsonLines' >> WriteJsonLines(output))
    counters = run_pipeline(p, 'index --format jsonl')
    _report(counters, f'wrote documents of {", ".join(names)} to {output}')
    return 0


def _report(counters, what):
    from beamcrawl.transforms.base import metrics
    deleted = sum(v for k, v in counters.items() if k.startswith(metrics.INDEX_DELETED))
    print(f'{what}: {counters.get(metrics.INDEX_DOCUMENTS, 0)} documents, {deleted} deletions, '
          f'{counters.get(metrics.INDEX_SKIPPED, 0)} pages without a usable parse')


if __name__ == '__main__':
    sys.exit(run_command('index', sys.argv[1:]))
