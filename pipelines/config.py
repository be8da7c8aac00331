"""Show the effective configuration, with where each value comes from (Nutch's showproperties).

beamcrawl config [CRAWL_DIR] [--json] [--set-only] [--conf FILE] [-D key=value]
beamcrawl config CRAWL_DIR --save [--conf FILE] [-D key=value]
Prints every key, its value and its source: default, crawl dir (the settings the crawl directory
recorded), config file (--conf), BEAMCRAWL_CONF, or -D. `--save` records the crawl directory's
settings with the given site file and -D values applied (docs/crawl-dir.md, "Site settings").
"""

import json
import logging
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError

log = logging.getLogger('beamcrawl')


def add_arguments(parser):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR', nargs='?',
                        help='a crawl directory: its recorded settings apply')
    parser.add_argument('--json', action='store_true',
                        help='one JSON object: {key: {"value": v, "source": s}}')
    parser.add_argument('--set-only', action='store_true', help='only keys not at their default')
    parser.add_argument('--save', action='store_true',
                        help="record the settings shown in the crawl directory (with --conf, -D)")


def _text(value) -> str:
    if isinstance(value, tuple):
        return ','.join(map(str, value))
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)


def run(args, cfg, now, beam_args):
    if args.save:
        return _save(args, cfg)
    keys = sorted(cfg.sources) if args.set_only else sorted(cfg)
    if args.json:
        print(json.dumps({k: {'value': list(cfg[k]) if isinstance(cfg[k], tuple) else cfg[k],
                              'source': cfg.sources.get(k, 'default')} for k in keys},
                         ensure_ascii=False, indent=1))
        return 0
    for key in keys:
        print(f'{key}\t{_text(cfg[key])}\t{cfg.sources.get(key, "default")}')
    return 0


def _save(args, cfg):
    import datetime

    from beamcrawl.transforms.base.config import recorded_text
    from beamcrawl.transforms.storage.fs import write_file
    from beamcrawl.transforms.storage.layout import CrawlLayout
    if not args.crawl_dir:
        raise UserError('--save: name the crawl directory whose settings to record')
    layout = CrawlLayout(args.crawl_dir)
    # Every value not at its default (recorded before, or given now) is recorded.
    saved = cfg.with_overrides()
    saved.explicit = {key: cfg[key] for key in cfg.sources}
    when = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    write_file(layout.site_conf, recorded_text(saved, 'config --save', when), replace=True)
    print(f'recorded {len(saved.explicit)} keys in {layout.site_conf}')
    return 0


if __name__ == '__main__':
    sys.exit(run_command('config', sys.argv[1:]))
