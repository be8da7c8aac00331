"""Makes the Nutch crawl fixture of tests/test_import_nutch.py: a small crawl by a real Apache
Nutch 1.x of the demo web (transforms/testing/demosite.py), served on loopback.

    NUTCH_HOME=/path/to/nutch/runtime/local JAVA_HOME=/path/to/jdk17 \
        .venv/bin/python tests/nutch_crawl/make_crawl.py

It serves the demo web (an HTTP proxy on loopback: the URLs carry no port, so the crawl does
not depend on the port it was made with), runs two rounds of inject/generate/fetch/parse/
updatedb and then invertlinks with Nutch's own `bin/nutch`, and replaces, next to this script:

    crawl/               the crawl as Nutch wrote it (crawldb/, linkdb/, segments/)
    readdb-stats.txt     `bin/nutch readdb crawl/crawldb -stats` (the expected statistics)
    readdb-dump.txt      `bin/nutch readdb crawl/crawldb -dump` (the expected records, UTC)
    readlinkdb-dump.txt  `bin/nutch readlinkdb crawl/linkdb -dump`
    nutch-version.txt    the Nutch version that made it
    snappy-block/, snappy-record/   the same crawldb rewritten by `bin/nutch mergedb` with
                         SnappyCodec, block- and record-compressed (Hadoop 3 writes Snappy
                         without native libraries; `--snappy-only` remakes just these from the
                         saved crawl/)

Nutch's site settings are in SITE below: the proxy (through protocol-httpclient: Nutch's
protocol-http asks a proxy for a CONNECT tunnel even for http URLs, which the test web does not
serve), no politeness delay, and the regex URL
filter without its `-[?*!@=]` rule (the demo shop's pages have queries). Run it again only to
remake the fixture (the tests compare with the saved files, whatever time they were made at).
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from beamcrawl.transforms.testing.demosite import demo_sites  # noqa: E402
from beamcrawl.transforms.testing.web import TestWeb  # noqa: E402

# Seeds with Nutch's per-URL settings and one free metadata key.
SEEDS = ('http://www.demo.test/\n'
         'http://blog.demo.test/\tnutch.score=2.0\ttopic=news\n'
         'http://shop.demo.test/catalog?page=1\tnutch.fetchInterval=86400\n')

SITE = """<?xml version="1.0"?>
<configuration>
<property><name>http.agent.name</name><value>beamcrawl-fixture</value></property>
<property><name>http.proxy.host</name><value>127.0.0.1</value></property>
<property><name>http.proxy.port</name><value>{port}</value></property>
<property><name>fetcher.server.delay</name><value>0.0</value></property>
<property><name>fetcher.threads.fetch</name><value>4</value></property>
<property><name>plugin.includes</name><value>{plugins}</value></property>
</configuration>
"""

PLUGINS = ('protocol-httpclient|urlfilter-regex|parse-(html|tika)|index-(basic|anchor)|'
           'scoring-opic|urlnormalizer-(pass|regex|basic)')

URL_FILTER = ('-^(?:file|ftp|mailto):\n'
              '-(?i)\\.(?:gif|jpg|png|ico|css|sit|eps|wmf|zip|ppt|mpg|xls|gz|rpm|tgz|mov|exe|'
              'jpeg|bmp|js)$\n'
              '+.\n')


def snappy_copies(home: str, env: dict, crawldb: str) -> None:
    """The crawldb rewritten with SnappyCodec, block- and record-compressed, next to this
    script (snappy-block/crawldb, snappy-record/crawldb)."""
    for kind in ('block', 'record'):
        out = os.path.join(HERE, f'snappy-{kind}')
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([os.path.join(home, 'bin', 'nutch'), 'mergedb',
                        '-Dmapreduce.output.fileoutputformat.compress=true',
                        f'-Dmapreduce.output.fileoutputformat.compress.type={kind.upper()}',
                        '-Dmapreduce.output.fileoutputformat.compress.codec='
                        'org.apache.hadoop.io.compress.SnappyCodec',
                        os.path.join(out, 'crawldb'), crawldb], env=env, check=True,
                       stdout=subprocess.DEVNULL)


def main() -> int:
    home = os.environ.get('NUTCH_HOME', '/work/peers/nutch-src/runtime/local')
    env = dict(os.environ, TZ='UTC')
    env.setdefault('JAVA_HOME', '/usr/lib/jvm/java-17-openjdk-amd64')
    if '--snappy-only' in sys.argv:
        snappy_copies(home, env, os.path.join(HERE, 'crawl', 'crawldb'))
        return 0
    work = tempfile.mkdtemp(prefix='nutch-fixture-')
    conf = os.path.join(work, 'conf')
    shutil.copytree(os.path.join(home, 'conf'), conf)
    env['NUTCH_CONF_DIR'] = conf
    env['NUTCH_LOG_DIR'] = os.path.join(work, 'logs')
    crawl = os.path.join(work, 'crawl')
    with open(os.path.join(work, 'seeds.txt'), 'w', encoding='utf-8') as f:
        f.write(SEEDS)
    with open(os.path.join(conf, 'regex-urlfilter.txt'), 'w', encoding='utf-8') as f:
        f.write(URL_FILTER)

    def nutch(*args, out=None):
        print('bin/nutch', *args, file=sys.stderr)
        done = subprocess.run([os.path.join(home, 'bin', 'nutch'), *args], env=env, check=True,
                              cwd=work, stdout=subprocess.PIPE, text=True)
        if out:         # the work directory's path replaced by the fixture's
            with open(os.path.join(HERE, out), 'w', encoding='utf-8') as f:
                f.write(done.stdout.replace(work, 'tests/nutch_crawl'))

    with TestWeb(demo_sites()) as web:
        with open(os.path.join(conf, 'nutch-site.xml'), 'w', encoding='utf-8') as f:
            f.write(SITE.format(port=web.port, plugins=PLUGINS))
        nutch('inject', f'{crawl}/crawldb', os.path.join(work, 'seeds.txt'))
        for _ in range(2):
            before = set(glob.glob(f'{crawl}/segments/*'))
            nutch('generate', f'{crawl}/crawldb', f'{crawl}/segments')
            segment, = set(glob.glob(f'{crawl}/segments/*')) - before
            nutch('fetch', segment)
            nutch('parse', segment)
            nutch('updatedb', f'{crawl}/crawldb', segment)
        nutch('invertlinks', f'{crawl}/linkdb', '-dir', f'{crawl}/segments')
    nutch('readdb', f'{crawl}/crawldb', '-stats', out='readdb-stats.txt')
    nutch('readdb', f'{crawl}/crawldb', '-dump', os.path.join(work, 'dump'))
    nutch('readlinkdb', f'{crawl}/linkdb', '-dump', os.path.join(work, 'linkdump'))
    for name, src in (('readdb-dump.txt', 'dump'), ('readlinkdb-dump.txt', 'linkdump')):
        with open(os.path.join(HERE, name), 'w', encoding='utf-8') as out:
            for part in sorted(glob.glob(os.path.join(work, src, 'part-*'))):
                with open(part, encoding='utf-8') as f:
                    out.write(f.read())
    jars = glob.glob(os.path.join(home, 'lib', 'apache-nutch-*.jar'))
    with open(os.path.join(HERE, 'nutch-version.txt'), 'w', encoding='utf-8') as f:
        f.write(''.join(f'{os.path.basename(j)[:-4]}\n' for j in jars) or 'unknown\n')
    shutil.rmtree(os.path.join(HERE, 'crawl'), ignore_errors=True)
    shutil.copytree(crawl, os.path.join(HERE, 'crawl'))
    snappy_copies(home, env, os.path.join(HERE, 'crawl', 'crawldb'))
    shutil.rmtree(work)
    return 0


if __name__ == '__main__':
    sys.exit(main())
