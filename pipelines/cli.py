"""`beamcrawl <command> CRAWL_DIR [options] [beam pipeline options]`.

Each command is a module of `pipelines` with `add_arguments(parser)` and
`run(args, cfg, now, beam_args) -> exit code`; `python -m beamcrawl.pipelines.<name>` runs the
same code.
Options every command accepts: `--conf FILE`, `-D key=value`, `--now T`. Beam options pass
through. User errors print one line on stderr and exit 2, with no traceback.
"""

import argparse
import datetime
import errno
import importlib
import logging
import os
import re
import sys
from typing import List, Optional

from beamcrawl.transforms.base import startup
from beamcrawl.transforms.runners import interrupts
from beamcrawl.transforms.runners.logs import setup_logging

COMMANDS = {
    'inject': 'beamcrawl.pipelines.inject',
    'readdb': 'beamcrawl.pipelines.readdb',
    'generate': 'beamcrawl.pipelines.generate',
    'fetch': 'beamcrawl.pipelines.fetch',
    'parse': 'beamcrawl.pipelines.parse',
    'updatedb': 'beamcrawl.pipelines.updatedb',
    'invertlinks': 'beamcrawl.pipelines.invertlinks',
    'readlinkdb': 'beamcrawl.pipelines.readlinkdb',
    'updatehostdb': 'beamcrawl.pipelines.updatehostdb',
    'readhostdb': 'beamcrawl.pipelines.readhostdb',
    'crawl': 'beamcrawl.pipelines.crawl',
    'readseg': 'beamcrawl.pipelines.readseg',
    'schedule-sim': 'beamcrawl.pipelines.schedule_sim',
    'demo': 'beamcrawl.pipelines.demo',
    'flink': 'beamcrawl.pipelines.flink',
    'hdfs': 'beamcrawl.pipelines.hdfs',
    's3': 'beamcrawl.pipelines.s3',
    'dedup': 'beamcrawl.pipelines.dedup',
    'index': 'beamcrawl.pipelines.index',
    'search': 'beamcrawl.pipelines.search',
    'warc-export': 'beamcrawl.pipelines.warc_export',
    'sitemap': 'beamcrawl.pipelines.sitemap',
    'config': 'beamcrawl.pipelines.config',
    'filterchecker': 'beamcrawl.pipelines.filterchecker',
    'normalizerchecker': 'beamcrawl.pipelines.normalizerchecker',
    'robotsparser': 'beamcrawl.pipelines.robotsparser',
    'parsechecker': 'beamcrawl.pipelines.parsechecker',
    'indexchecker': 'beamcrawl.pipelines.indexchecker',
    'domainstats': 'beamcrawl.pipelines.domainstats',
    'crawlcomplete': 'beamcrawl.pipelines.crawlcomplete',
    'protocolstats': 'beamcrawl.pipelines.protocolstats',
    'clean': 'beamcrawl.pipelines.clean',
    'dump': 'beamcrawl.pipelines.dump',
    'mergedb': 'beamcrawl.pipelines.mergedb',
    'mergelinkdb': 'beamcrawl.pipelines.mergelinkdb',
    'mergesegs': 'beamcrawl.pipelines.mergesegs',
    'freegen': 'beamcrawl.pipelines.freegen',
    'import-nutch': 'beamcrawl.pipelines.import_nutch',
    'webgraph': 'beamcrawl.pipelines.webgraph',
    'linkrank': 'beamcrawl.pipelines.linkrank',
    'scoreupdater': 'beamcrawl.pipelines.scoreupdater',
    'nodedumper': 'beamcrawl.pipelines.nodedumper',
    'report': 'beamcrawl.pipelines.report',
}
# Commands that only read a crawl directory: they never record its site settings.
READ_ONLY = frozenset({'readdb', 'readseg', 'readlinkdb', 'readhostdb', 'search', 'config',
                       'filterchecker', 'normalizerchecker', 'robotsparser', 'parsechecker',
                       'indexchecker', 'domainstats', 'crawlcomplete', 'protocolstats', 'dump',
                       'nodedumper', 'report'})
ALIASES = {'linkdb': 'invertlinks'}
# `beamcrawl --help` lists the commands in groups, as `bin/nutch` does; every command is in one.
GROUPS = [
    ('the crawl cycle', ['crawl', 'inject', 'generate', 'freegen', 'fetch', 'parse', 'updatedb',
                         'invertlinks', 'dedup', 'sitemap', 'demo']),
    ('readers and statistics', ['readdb', 'readlinkdb', 'readseg', 'readhostdb', 'domainstats',
                                'protocolstats', 'crawlcomplete', 'dump']),
    ('checkers', ['parsechecker', 'indexchecker', 'filterchecker', 'normalizerchecker',
                  'robotsparser', 'config']),
    ('indexing', ['index', 'clean', 'search']),
    ('databases and segments', ['updatehostdb', 'mergedb', 'mergelinkdb', 'mergesegs',
                                'import-nutch', 'warc-export']),
    ('link analysis', ['webgraph', 'linkrank', 'scoreupdater', 'nodedumper']),
    ('scheduling', ['schedule-sim']),
    ('reports', ['report']),
    ('clusters and stores', ['flink', 'hdfs', 's3']),
]


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line and exits 2."""

    def error(self, message):
        self.exit(2, f'{self.prog}: error: {message} (see --help)\n')


# Arguments that name local files or directories. They are made absolute before any pipeline
# is built: a cluster's workers run in another working directory.
_PATH_ARGS = ('crawl_dir', 'conf', 'seeds', 'dump', 'plot', 'home', 'inputs', 'out', 'urls',
              'nutch_dir')


def _absolute(value):
    return os.path.abspath(value) if isinstance(value, str) and value not in ('', '-') and \
        '://' not in value else value


def _absolute_paths(args) -> None:
    for name in _PATH_ARGS:
        if not hasattr(args, name):
            continue
        value = getattr(args, name)
        setattr(args, name, [_absolute(v) for v in value] if isinstance(value, list)
                else _absolute(value))


def run_command(name: str, argv: List[str]) -> int:
    """Runs one command with its arguments; returns the exit code."""
    setup_logging()
    # Command modules import their pipelines' dependencies (Beam: 0.4 s) inside run(), so
    # that `--help` is answered before any of them is imported.
    module = importlib.import_module(COMMANDS[name])
    prog = f'beamcrawl {name}'
    parser = _Parser(prog=prog, allow_abbrev=False, description=module.__doc__.split('\n')[0])
    parser.add_argument('--conf', metavar='FILE',
                        help='site config (YAML or nutch-site.xml) over crawler-default.yaml')
    parser.add_argument('-D', dest='defines', action='append', default=[], metavar='KEY=VALUE',
                        help='set a config key (wins over --conf); repeatable')
    parser.add_argument('--now', metavar='T',
                        help='current time: ISO-8601 with zone, or epoch ms (default: wall clock)')
    module.add_arguments(parser)
    if '-h' in argv or '--help' in argv:
        parser.parse_known_args(argv)            # prints the help and exits
    # A command that builds its pipeline late (fetch: BEAM_LATE) imports Beam only then when
    # nothing on its command line needs Beam first: no Beam option, no path of a store.
    late = getattr(module, 'BEAM_LATE', False) and _without_beam(argv, parser)
    if late:
        ours, beam_args = list(argv), []
    else:
        beam_setup()
        from beamcrawl.transforms.runners.runtime import split_beam_args
        ours, beam_args = split_beam_args(argv, parser)

    from beamcrawl.transforms.base.clock import parse_now
    from beamcrawl.transforms.base.errors import UserError, from_worker
    args = parser.parse_args(ours)
    _absolute_paths(args)
    if not late:
        from beamcrawl.transforms.runners.runtime import use_filesystem_options
        use_filesystem_options(beam_args)
    interrupts.handle_signals()
    try:
        layout = None
        from beamcrawl.transforms.storage.layout import CrawlLayout
        if getattr(args, 'crawl_dir', None):
            if not late:
                from apache_beam.options.pipeline_options import PipelineOptions

                from beamcrawl.transforms.storage.stores import check_options
                check_options(args.crawl_dir, PipelineOptions(beam_args))
            layout = CrawlLayout(args.crawl_dir)
            layout.refuse_foreign()         # a Nutch crawl, a file: refused before anything
        cfg = site_config(args, layout)
        if late and _names_a_store(cfg):       # a resource on a store: Beam's filesystems now
            beam_setup()
        now = parse_now(args.now)
        try:
            return module.run(args, cfg, now, beam_args)
        finally:
            if layout is not None and name not in READ_ONLY:
                # A command writing into another crawl directory (mergedb --out) records the
                # settings there: CRAWL_DIR is only read.
                written = getattr(module, 'written_crawl_dir', lambda _: None)(args)
                record_site_config(name, cfg, CrawlLayout(written) if written else layout)
    except UserError as e:
        print(f'{prog}: {_without_step(str(e))}', file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return _interrupted(prog)
    except OSError as e:            # disk full, no permission... (nothing is lost: see docs)
        return _os_error(prog, _os_error_in(e) or e)
    except Exception as e:  # pylint: disable=broad-except
        if interrupts.INTERRUPTED.is_set():    # Beam wraps a KeyboardInterrupt in its DoFns
            return _interrupted(prog)
        remote = from_worker(e)     # a worker process's InputError, reported as text
        if remote is not None:
            print(f'{prog}: {remote}', file=sys.stderr)
            return remote.exit_code
        cause = _os_error_in(e)     # Beam re-raises a worker's OSError wrapped in its own error
        if cause is not None:
            return _os_error(prog, cause)
        from beamcrawl.transforms.storage.stores import explain
        store = explain(e)          # the crawl directory's store refused, or cannot be reached
        if store is not None:
            print(f'{prog}: {store}', file=sys.stderr)
            return 2
        # Not a user's mistake: a defect. Its traceback is for the bug report; the exit code
        # still says "failed" (2), never "nothing to do" (1).
        logging.getLogger('beamcrawl').exception('%s: unexpected error', prog)
        print(f'{prog}: failed: {type(e).__name__}: {_first_line(e)} (an unexpected error; the '
              f'traceback is above)', file=sys.stderr)
        return 2


_beam_ready = []       # beam_setup() ran


def beam_setup() -> None:
    """Beam's part of a command's start: its filesystems loaded on demand (load_filesystems_on_
    demand), with the command line's filesystem options. run_command calls it before parsing
    the arguments; a command with BEAM_LATE, whose command line had no Beam option, calls it
    itself before it imports Beam's modules (the fetch: after its head start,
    docs/performance.md)."""
    if _beam_ready:
        return
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions

    from beamcrawl.transforms.storage.stores import load_filesystems_on_demand
    load_filesystems_on_demand(_deferred)
    if FileSystems._pipeline_options is None:   # pylint: disable=protected-access
        FileSystems.set_options(PipelineOptions([]))
    _beam_ready.append(True)            # only once it is done (an interrupted import: again)


def _without_beam(argv: List[str], parser: argparse.ArgumentParser) -> bool:
    """Whether a command line holds no Beam option (every `--name` is the command's own) and no
    path of a store (`://`, in it or in BEAMCRAWL_CONF): then nothing needs Beam before the
    command builds its pipeline."""
    ours = parser._option_string_actions  # pylint: disable=protected-access
    if any('://' in token for token in argv) or '://' in os.environ.get('BEAMCRAWL_CONF', ''):
        return False
    return all(not t.startswith('--') or t.split('=', 1)[0] in ours for t in argv)


def _names_a_store(cfg) -> bool:
    """Whether a setting names a path on a store (`s3://...`: a URL filter's file, say; web
    URLs aside), which Beam's filesystems read."""
    def values(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from values(item)
    return any('://' in text and not text.lower().startswith(('http://', 'https://'))
               for value in cfg.values() for text in values(value))


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:300] if lines else ''


def site_config(args, layout):
    """The configuration of a command: defaults < the crawl directory's recorded site settings
    < the site file (--conf, or BEAMCRAWL_CONF) < -D (docs/crawl-dir.md, "Site settings")."""
    from beamcrawl.transforms.base.config import load_config, read_recorded
    site, label = args.conf, 'config file'
    if not site and os.environ.get('BEAMCRAWL_CONF'):
        site, label = os.path.abspath(os.environ['BEAMCRAWL_CONF']), 'BEAMCRAWL_CONF'
    recorded = read_recorded(layout.site_conf) if layout is not None else None
    cfg = load_config(site, args.defines, recorded=recorded, site_label=label)
    cfg.recorded = recorded is not None
    for note in cfg.notes:
        logging.getLogger('beamcrawl').warning('%s', note)
    return cfg


def record_site_config(name: str, cfg, layout) -> None:
    """The first command that writes into a crawl directory with a site file or -D records
    them there, so that a later command without them does not crawl with other settings (a
    fetch refusing every intranet URL, a parse dropping every outlink). Done once the command
    has made the directory (a usage error makes nothing and records nothing)."""
    from beamcrawl.transforms.base.config import recorded_text
    from beamcrawl.transforms.storage.fs import exists, write_file
    if cfg.recorded or not cfg.explicit or not exists(layout.root):
        return
    when = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    try:
        made = write_file(layout.site_conf, recorded_text(cfg, name, when), replace=False)
    except OSError as e:        # a full disk: the command's own error is the one to report
        logging.getLogger('beamcrawl').warning('could not record the site settings in %s: %s',
                                               layout.site_conf, e)
        return
    if made:
        logging.getLogger('beamcrawl').info(
            'recorded the site settings (%d keys) in %s: later commands on this crawl '
            'directory apply them', len(cfg.explicit), layout.site_conf)


def _without_step(message: str) -> str:
    """A message without the " [while running 'Step']" Beam appends to errors in DoFns."""
    return re.sub(r"( \[while running '[^']*'\])+$", '', message)


def _interrupted(prog: str) -> int:
    print(f'{prog}: interrupted ({interrupts.signal_name() or "SIGINT"}); nothing of this '
          f'step was kept, the crawl directory is as it was: run it again', file=sys.stderr)
    return interrupts.exit_code()


_REMOTE_OS_ERROR = re.compile(
    r"^\w*(?:Error|Exception): \[Errno (\d+)\] ([^:\n]*)(?:: '([^'\n]*)')?", re.M)


def _os_error_in(error: BaseException):
    """The OSError a (possibly wrapped) exception was caused by, if any; also one that a worker
    process raised, which Beam reports as text."""
    seen, first = 0, error
    while error is not None and seen < 10:
        if isinstance(error, OSError) and error.errno:
            return error
        details = getattr(error, 'exception_details', None)   # Beam's BeamIOError: per path
        if isinstance(details, dict):
            for inner in details.values():
                if isinstance(inner, OSError) and inner.errno:
                    return inner
        error = error.__cause__ or error.__context__
        seen += 1
    found = list(_REMOTE_OS_ERROR.finditer(str(first)))
    if found:
        number, text, path = found[-1].groups()
        return OSError(int(number), text, path) if path else OSError(int(number), text)
    return None


# What to do about an OSError, by errno: the advice that fits it (any other: _OTHER).
_ADVICE = {
    errno.ENOSPC: 'the disk is full: free space on it',
    errno.EDQUOT: 'your disk quota is used up: free space or raise the quota',
    errno.EACCES: 'permission denied: fix the permissions of that path, or run as its owner',
    errno.EPERM: 'operation not permitted: fix the permissions of that path',
    errno.EROFS: 'the filesystem is read-only: put the crawl directory on a writable one',
    errno.ENOTDIR: 'a part of that path is a file, not a directory: name a directory',
    errno.EISDIR: 'that path is a directory where a file was expected: name a file',
    errno.ENOENT: 'that path does not exist (was it removed while the command ran?)',
    errno.EMFILE: 'too many open files: raise the limit (ulimit -n)',
    errno.ENFILE: 'the system has too many open files: close some programs',
    errno.EIO: 'the device reported an input/output error: check the disk',
    errno.ENAMETOOLONG: 'the path is too long: use a shorter one',
}
_OTHER = 'fix the cause'


def _os_error(prog: str, error: OSError) -> int:
    """One line for an error of the filesystem: what failed, where, and what to do. Exit 2."""
    path = error.filename or ''
    advice = _ADVICE.get(error.errno, _OTHER)
    print(f'{prog}: {path + ": " if path else ""}{error.strerror or error} '
          f'(errno {error.errno} {errno.errorcode.get(error.errno, "")}); {advice}, then run the '
          f'command again; nothing complete was lost (a fetch resumes)', file=sys.stderr)
    return 2


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    names = sorted(COMMANDS) + sorted(ALIASES)
    if not argv or argv[0] in ('-h', '--help'):
        print(_usage())
        return 0 if argv else 2
    name = ALIASES.get(argv[0], argv[0])
    if name not in COMMANDS:
        print(f"beamcrawl: unknown command '{argv[0]}' (commands: {', '.join(names)})",
              file=sys.stderr)
        return 2
    return run_command(name, argv[1:])


# What the help list leaves out of a description's first line: the name of the Nutch command
# (the same), an alias (in the label) and how run_local.sh starts a service.
_NOT_IN_HELP = re.compile(r"\s*\(Nutch's [^()]*(?:\([^)]*\)[^()]*)?\)|;? alias `[^`]*`"
                          r"|\s*\(\./run_local[^)]*\)")


def _usage() -> str:
    """The commands by group, each with the first line of its module's description (the
    command modules import nothing heavy at their top: this costs milliseconds)."""
    lines = ['usage: beamcrawl <command> CRAWL_DIR [options] [beam pipeline options]',
             'where <command> is one of:']
    aliases = {name: alias for alias, name in ALIASES.items()}
    for title, names in GROUPS:
        names = [name for name in names if name in COMMANDS]
        if names:
            lines.append(f'  {title}:')
        for name in names:
            doc = (importlib.import_module(COMMANDS[name]).__doc__ or '').strip()
            first = doc.split('. ')[0].split('\n\n')[0].replace('\n', ' ').rstrip('.')
            first = _NOT_IN_HELP.sub('', first)
            first = first if len(first) <= 74 else first[:first.rfind(' ', 0, 73)] + ' …'
            label = name + (f' ({aliases[name]})' if name in aliases else '')
            lines.append(f'    {label:<20} {first}')
    lines.append("'beamcrawl <command> --help' describes a command.")
    return '\n'.join(lines)


# Beam connectors that `import apache_beam` loads eagerly and beamcrawl never uses: MongoDB (via
# pymongo) and BigQuery (with Pub/Sub, GCS and the cross-language IOs, imported in the same
# guarded block). They cost about a third of Beam's import time (docs/performance.md). Also
# pyarrow, which Beam's type hints import when it is installed, for Arrow batches (0.03 s); and
# bson, which the MongoDB connector imports before it finds pymongo missing.
_UNUSED_BEAM_IMPORTS = ('pymongo', 'bson', 'apache_beam.io.gcp.bigquery', 'pyarrow')
# Modules Beam imports at its start and uses only in functions that beamcrawl's pipelines do not
# reach on the local runner: httplib2 (with pyparsing: 0.02 s), for staging files to a cluster's
# workers. They are imported on first use (startup.defer_module).
_DEFERRED_IMPORTS = ('httplib2',)

# Beam's filesystems that beamcrawl uses only for crawl directories on a cluster's store, by
# scheme: their client libraries (boto3, hdfs) cost 0.11 s of every command's start. They are
# loaded when a path first names their scheme (docs/performance.md, "Smaller costs").
_DEFERRED_FILESYSTEMS = {'s3': 'apache_beam.io.aws.s3filesystem',
                         'hdfs': 'apache_beam.io.hadoopfilesystem'}
_deferred: dict = {}


def skip_unused_beam_imports() -> None:
    """Marks the _UNUSED_BEAM_IMPORTS as unavailable before Beam is imported: Beam then skips
    them, as it does where their client libraries are not installed; the _DEFERRED_FILESYSTEMS
    too, until load_filesystems_on_demand() is in place; and beartype and the
    _DEFERRED_IMPORTS until they are used (startup.defer_beartype, defer_module). For the `beamcrawl` program only (a
    library user's process is left alone); pipelines on a cluster import Beam in their own
    workers."""
    if 'apache_beam' not in sys.modules:
        startup.defer_beartype()
        for name in _DEFERRED_IMPORTS:
            startup.defer_module(name)
        for name in _UNUSED_BEAM_IMPORTS:
            sys.modules.setdefault(name, None)
        for scheme, name in _DEFERRED_FILESYSTEMS.items():
            if name not in sys.modules:
                sys.modules[name] = None
                _deferred[scheme] = name


def entry() -> None:
    """The `beamcrawl` program: main(), then the process ends at once. Everything is written
    and published by then (and logged); the interpreter's teardown, which frees every object
    and module one by one, would only add about 0.2 s to every command (measured after a
    fetch). A process that started a Flink job server, or ran a portable job, leaves through
    its exit handlers, which stop them."""
    startup.begin()
    skip_unused_beam_imports()
    try:
        code = main()
    finally:
        startup.end()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    portable = sys.modules.get('beamcrawl.transforms.runners.portable')
    if (portable is None or not portable.cleanups_pending()) and \
            'apache_beam.runners.portability.portable_runner' not in sys.modules:
        os._exit(code)
    sys.exit(code)


if __name__ == '__main__':
    entry()
