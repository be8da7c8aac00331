"""Write segments' content to files by MIME type, for inspection (Nutch's `dump`, FileDumper).

beamcrawl dump CRAWL_DIR [SEGMENT ...] OUT [--mimetype TYPE ...] [--flat]
Writes each stored content record (default: of every segment with content) to
OUT/type/subtype/host/name-HASH.ext, or OUT/name-HASH.ext with --flat: name is the URL's last
path segment made safe, HASH a hash of the URL, ext the type's usual extension
(docs/toolbox.md). --mimetype keeps only those types (`text/html`, or `image`
for every image type). OUT/_urls.tsv lists path, URL, content type and fetch time of each file;
the counts per type are printed at the end. OUT must not exist yet: it appears whole, or not at
all. The newest content of a URL wins when several segments hold it.
"""

import os
import sys

from beamcrawl.pipelines.cli import run_command


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR')
    parser.add_argument('paths', nargs='+', metavar='SEGMENT ... OUT',
                        help='segments (names or paths; default: all with content), then the '
                             'output directory')
    parser.add_argument('--mimetype', action='append', default=[], metavar='TYPE',
                        help='only this type (type/subtype, or a top-level type); repeatable')
    parser.add_argument('--flat', action='store_true', help='all files in OUT itself')


def _wanted(mime: str, types) -> bool:
    return not types or mime in types or mime.split('/', 1)[0] in types


def run(args, cfg, now, beam_args):
    import collections
    import shutil
    import uuid

    from beamcrawl.transforms.base.errors import UserError
    from beamcrawl.transforms.policy.dumpnames import dump_path, mime_of
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.parts import iter_records
    from beamcrawl.transforms.storage.segments import CONTENT
    *requested, out = args.paths
    out = os.path.abspath(out)
    if os.path.exists(out):
        raise UserError(f'{out}: exists; name a new directory for the files')
    types = {t.strip().lower() for t in args.mimetype if t.strip()}
    crawl = CrawlLayout(args.crawl_dir)
    segments = crawl.segments_having(CONTENT, requested)
    partial = os.path.join(os.path.dirname(out), f'.{os.path.basename(out)}.'
                                                 f'{uuid.uuid4().hex[:8]}.partial')
    from beamcrawl.transforms.base.progress import Loop
    from beamcrawl.transforms.storage.parts import count_records
    counts, files = collections.Counter(), {}
    shown = Loop('dump', sum(count_records(crawl.part_files(n, CONTENT)) for n in segments),
                 'records', cfg['runner.progress.seconds'])
    os.makedirs(partial)
    try:
        for name in sorted(segments):                # a later segment's content replaces
            for record in iter_records(crawl.part_files(name, CONTENT)):
                shown.add()
                mime = mime_of(record['content_type'])
                if not _wanted(mime, types):
                    continue
                path = dump_path(record['url'], record['content_type'], args.flat)
                target = os.path.join(partial, path)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, 'wb') as f:
                    f.write(record['content'] or b'')
                if path not in files:
                    counts[mime] += 1
                files[path] = (record['url'], mime, record['fetch_time'])
        with open(os.path.join(partial, '_urls.tsv'), 'w', encoding='utf-8') as f:
            f.write('path\turl\tcontent_type\tfetch_time\n')
            for path, (url, mime, fetch_time) in sorted(files.items()):
                f.write(f'{path}\t{url}\t{mime}\t{fetch_time}\n')
        os.rename(partial, out)
        shown.end()
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    for mime, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        print(f'{n}\t{mime}')
    print(f'dumped {sum(counts.values())} files from {len(segments)} segments to {out}')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('dump', sys.argv[1:]))
