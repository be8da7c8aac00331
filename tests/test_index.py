"""The indexer: document building (pure), the Beam join, dedup, the shards, search, jsonl."""

import glob
import json
import re

import apache_beam as beam
import pytest
import tantivy
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beamcrawl.transforms.index import BuildDocuments, Deletions, JoinByUrl
from beamcrawl.transforms.policy.indexing import (IndexRules, anchors_of, boost, build_document,
                                                  deletion, original_key)
from beamcrawl.transforms.storage.layout import CrawlLayout
from beamcrawl.transforms.storage.records import crawl_datum, inlinks, parse_data, parse_text
from tests.conftest import read_db, run_cli, write_seeds
from tests.testweb import Page, html_page

RULES = IndexRules(score_power=0.5, max_text_length=-1, max_anchors=-1)
NOW = 1795305600000
DAY = 86400000


def _db(url, status='db_fetched', score=4.0, signature=b'S', **kw):
    return crawl_datum(url, status, fetch_time=NOW + DAY, fetch_interval=86400, score=score,
                       signature=signature, metadata={'Content-Type': 'text/html'}, **kw)


def _data(url, title='T', status='success', links=(), **meta):
    return parse_data(url, title=title, parse_status=status, outlinks=links,
                      metadata={'_ftk_': str(NOW), **meta})


def test_build_document_takes_every_field():
    doc = build_document(_db('http://a.test/x'), [('http://c.test/', 'see  this'),
                                                   ('http://b.test/', 'see this'),
                                                   ('http://d.test/', '')],
                         _data('http://a.test/x', links=[('http://z/', 'z')], lang='de'),
                         parse_text('http://a.test/x', 'some text'), RULES)
    assert doc == {'url': 'http://a.test/x', 'host': 'a.test', 'title': 'T', 'text': 'some text',
                   'anchors': ['see this'], 'content_type': 'text/html', 'fetch_time': NOW,
                   'score': 4.0, 'boost': 2.0, 'signature': '53', 'outlinks': 1, 'lang': 'de'}


@pytest.mark.parametrize('field,main,meta,text,lang', [
    ('text', 'the article', {'lang': 'de'}, 'menu the article footer', 'de'),
    ('main_text', 'the article', {'lang': 'de'}, 'the article', 'de'),
    ('main_text', '', {}, 'menu the article footer', ''),              # no main text: whole
    ('text', '', {'lang': 'de', 'lang.detected': 'fr'}, 'menu the article footer', 'fr'),
    ('text', '', {'lang.detected': 'fr', 'lang.confidence': '0.9'}, 'menu the article footer',
     'fr'),
])
def test_the_indexed_text_and_language(field, main, meta, text, lang):
    """indexer.text.field picks the whole or the main text (the whole one when a page has no
    main text); the detected language wins over the declared one (docs/documents.md)."""
    rules = IndexRules(score_power=0.5, max_text_length=-1, max_anchors=-1, text_field=field)
    doc = build_document(_db('http://a.test/x'), [], _data('http://a.test/x', **meta),
                         parse_text('http://a.test/x', 'menu the article footer', main), rules)
    assert (doc['text'], doc['lang']) == (text, lang)


def test_old_parse_text_records_have_no_main_text():
    rules = IndexRules(score_power=0.5, max_text_length=-1, max_anchors=-1,
                       text_field='main_text')
    doc = build_document(_db('http://a.test/x'), [], _data('http://a.test/x'),
                         {'url': 'http://a.test/x', 'text': 'old'}, rules)
    assert doc['text'] == 'old'


@pytest.mark.parametrize('status,parse_status,expected', [
    ('db_fetched', 'success', True), ('db_notmodified', 'success', True),
    ('db_fetched', 'failed', False), ('db_unfetched', 'success', False),
    ('db_gone', 'success', False)])
def test_only_fetched_pages_with_a_parse_are_documents(status, parse_status, expected):
    doc = build_document(_db('http://a/', status), [], _data('http://a/', status=parse_status),
                         None, RULES)
    assert (doc is not None) == expected


@pytest.mark.parametrize('status,reason', [
    ('db_gone', 'db_gone'), ('db_redir_perm', 'db_redir_perm'), ('db_redir_temp', 'db_redir_temp'),
    ('db_duplicate', 'db_duplicate'), ('db_fetched', None), ('db_unfetched', None)])
def test_deletions(status, reason):
    assert deletion(_db('http://a/', status)) == reason


def test_boost_and_the_original_of_duplicates():
    assert boost(4.0, 0.5) == 2.0 and boost(0.0, 0.5) == 0.0 and boost(-1, 0.5) == 0.0
    pages = [_db('http://long.test/page', score=1.0), _db('http://a.test/', score=1.0),
             _db('http://best.test/page/long', score=2.0)]
    assert min(pages, key=original_key)['url'] == 'http://best.test/page/long'
    pages = pages[:2]                       # equal scores: the shorter URL stays
    assert min(pages, key=original_key)['url'] == 'http://a.test/'
    # Nutch's order: the score, then the later (next-)fetch time, then the shorter URL after
    # percent-decoding; then the smaller URL, where Nutch would mark neither
    later = dict(_db('http://long.test/page', score=1.0), fetch_time=NOW + 2 * DAY)
    assert min([_db('http://a.test/', score=1.0), later], key=original_key) is later
    encoded = _db('http://a.test/%7Ea', score=1.0)                  # 'http://a.test/~a'
    assert min([_db('http://a.test/bcd', score=1.0), encoded], key=original_key) is encoded
    assert min([_db('http://b.test/', score=1.0), _db('http://a.test/', score=1.0)],
               key=original_key)['url'] == 'http://a.test/'
    assert anchors_of([('b', ' x '), ('a', 'y'), ('c', 'x')], 1) == ['y']


def test_join_and_build_on_a_pipeline(runner):
    with TestPipeline(runner=runner) as p:
        inputs = {
            'crawldb': p | 'Db' >> beam.Create([_db('http://a/'), _db('http://gone/', 'db_gone'),
                                                _db('http://old/')]),
            'linkdb': p | 'Links' >> beam.Create([inlinks('http://a/', [('http://b/', 'bee')])]),
            'parse_data': p | 'Data' >> beam.Create([
                ('20261101000000', _data('http://a/', 'old')),
                ('20261102000000', _data('http://a/', 'new'))]),
            'parse_text': p | 'Text' >> beam.Create([('20261102000000',
                                                      parse_text('http://a/', 'hello'))]),
        }
        docs = inputs | JoinByUrl() | BuildDocuments(rules=RULES, shards=2)
        out = (docs, inputs['crawldb'] | Deletions(shards=2)) | beam.Flatten()
        assert_that(out | beam.Map(lambda e: (e[1][0], e[1][1] if e[1][0] == 'delete'
                                              else (e[1][1]['title'], e[1][1]['anchors'],
                                                    e[1][1]['text']))),
                    equal_to([('doc', ('new', ['bee'], 'hello')),
                              ('delete', 'http://gone/')]))


_PAGE = '<p>' + 'ordinary words about a site ' * 5 + '</p>'


@pytest.fixture(scope='module', autouse=True)
def index_web(testweb):
    state = {'vanish': 200}

    def vanish(request):
        if state['vanish'] == 410:
            return Page(status=410, body=b'gone')
        return html_page('Vanishing page', _PAGE)

    testweb.add('idx-a.test', '/robots.txt', Page(status=404))
    testweb.add('idx-b.test', '/robots.txt', Page(status=404))
    testweb.add('idx-a.test', '/', Page(body=(
        '<html><head><title>A home</title></head><body>' + _PAGE +
        '<a href="http://idx-b.test/target">zygomorphic flowers</a>'
        '<a href="/same1">one</a><a href="/same2">two</a><a href="/vanish">v</a>'
        '</body></html>').encode()))
    copy = html_page('Same content', _PAGE + '<p>identical</p>')
    testweb.add('idx-a.test', '/same1', copy)
    testweb.add('idx-a.test', '/same2', copy)
    testweb.add('idx-a.test', '/vanish', vanish)
    testweb.add('idx-b.test', '/', Page(body=(
        '<html><head><title>B home</title></head><body>' + _PAGE +
        '<a href="/target">internalonly words</a></body></html>').encode()))
    testweb.add('idx-b.test', '/target', html_page('The target', _PAGE))
    return state


def _conf(web):
    return ['-D', 'http.agent.name=testbot', '-D', 'http.proxy.host=127.0.0.1',
            '-D', f'http.proxy.port={web.port}', '-D', 'fetcher.server.delay=0',
            '-D', 'domain.extra.suffixes=test', '-D', 'db.fetch.interval.default=86400']


def _search(crawl, query):
    proc = run_cli('search', crawl, query, '--json', check=False)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.slow
def test_crawl_index_search_dedup_and_deletion(web, index_web, tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://idx-a.test/', 'http://idx-b.test/'])
    proc = run_cli('crawl', crawl, '--seeds', seeds, '--rounds', '2', '--now', str(NOW),
                   '--round-interval', '0', '--index', *_conf(web))
    assert 'index' in proc.stderr
    layout = CrawlLayout(crawl)
    shards = layout.index_shards()
    assert [s.rsplit('/', 1)[1] for s in shards] == ['shard-00000', 'shard-00001']
    docs = {}
    for shard in shards:                    # readable by the tantivy package itself
        searcher = tantivy.Index.open(shard).searcher()
        for _, address in searcher.search(tantivy.Query.all_query(), 100).hits:
            doc = searcher.doc(address).to_dict()
            docs[doc['url'][0]] = doc
    target = docs['http://idx-b.test/target']
    assert target['anchors'] == ['zygomorphic flowers']          # external only (default)
    assert target['title'] == ['The target'] and target['host'] == ['idx-b.test']
    code, hits = _search(crawl, 'zygomorphic')   # in the target only as an anchor pointing to it
    assert code == 0 and 'http://idx-b.test/target' in [h['url'] for h in hits]
    assert 'zygomorphic' not in target['text'][0] + target['title'][0]
    # dedup: /same1 and /same2 are one page; the shorter URL (then the first) stays
    db = read_db(crawl)
    statuses = {u: db[u]['status'] for u in ('http://idx-a.test/same1', 'http://idx-a.test/same2')}
    assert sorted(statuses.values()) == ['db_duplicate', 'db_fetched']
    duplicate = next(u for u, s in statuses.items() if s == 'db_duplicate')
    assert duplicate not in docs and 'http://idx-a.test/vanish' in docs
    code, hits = _search(crawl, 'identical')
    assert code == 0 and [h['url'] for h in hits] == [u for u in statuses if u != duplicate]
    # the page goes 410: the next round makes it db_gone, and indexing deletes it
    index_web['vanish'] = 410
    run_cli('crawl', crawl, '--rounds', '1', '--now', str(NOW + 2 * DAY), '--index', *_conf(web))
    assert read_db(crawl)['http://idx-a.test/vanish']['status'] == 'db_gone'
    code, hits = _search(crawl, 'vanishing')
    assert code == 1 and hits == []
    code, hits = _search(crawl, 'target')
    assert code == 0 and hits[0]['url'] == 'http://idx-b.test/target'
    # jsonl for Solr/OpenSearch/Elasticsearch
    out = tmp_path / 'bulk'
    run_cli('index', crawl, '--format', 'jsonl', '--output', str(out), '--no-dedup')
    lines = [json.loads(l) for f in glob.glob(str(out / 'part-*.jsonl')) for l in open(f)]
    assert {d['id'] for d in lines} >= {'http://idx-b.test/target', 'http://idx-a.test/'}
    deleted = [json.loads(l)['id'] for f in glob.glob(str(out / 'deletions-*.jsonl'))
               for l in open(f)]
    assert 'http://idx-a.test/vanish' in deleted and duplicate in deleted
    # nothing left to index
    assert run_cli('index', crawl, check=False).returncode == 1


def test_search_without_an_index_is_one_line(tmp_path):
    proc = run_cli('search', str(tmp_path), 'x', check=False)
    assert proc.returncode == 2 and 'no index' in proc.stderr


def test_search_marks_the_words_found_in_text_with_accents(tmp_path):
    """Tantivy reports highlights as byte offsets: after an accent, characters and bytes differ."""
    from beamcrawl.transforms.storage.shards import update_shard
    shard = CrawlLayout(str(tmp_path)).index_shard(0)
    text = 'Le Café de Zürich: un café où l’on parle de café crème.'
    update_shard(None, shard, [], [dict(url='http://x.test/', host='x.test', title='Cafés',
                                        text=text, anchors=[], content_type='text/html',
                                        signature='s', lang='fr', fetch_time=NOW, score=1.0,
                                        boost=1.0, outlinks=0)])
    proc = run_cli('search', str(tmp_path), 'café')
    assert proc.stdout.splitlines()[2].strip() == (
        'Le **Café** de Zürich: un **café** où l’on parle de **café** crème')
    hit = json.loads(run_cli('search', str(tmp_path), 'café', '--json').stdout)
    assert hit['snippet'] == proc.stdout.splitlines()[2].strip()
    assert hit['snippet_html'].count('<b>') == 3


@pytest.mark.slow
def test_clean_deletes_what_the_crawldb_says_is_gone(web, index_web, tmp_path):
    """A page that went 410 in a round that did not index stays searchable until `clean`
    (Nutch's CleaningJob) deletes it; --format jsonl writes the deletions instead."""
    index_web['vanish'] = 200
    crawl = str(tmp_path / 'crawl')
    assert run_cli('clean', crawl, check=False).returncode == 2          # no crawldb
    seeds = write_seeds(tmp_path / 'seeds', ['http://idx-a.test/'])
    run_cli('crawl', crawl, '--seeds', seeds, '--rounds', '1', '--now', str(NOW), *_conf(web))
    proc = run_cli('clean', crawl, check=False)
    assert proc.returncode == 1 and 'no index' in proc.stderr
    proc = run_cli('crawl', crawl, '--rounds', '1', '--now', str(NOW), '--index',
                   '-D', 'runner.progress.seconds=0', *_conf(web))
    # index shows its progress: the crawldb's URLs joined with the segments' parses
    assert re.search(r'index join: (\d+)/\1 URLs \(100%\)', proc.stderr), proc.stderr
    assert _search(crawl, 'vanishing')[0] == 0
    index_web['vanish'] = 410
    try:
        run_cli('crawl', crawl, '--rounds', '1', '--now', str(NOW + 2 * DAY), *_conf(web))
    finally:
        index_web['vanish'] = 200
    assert read_db(crawl)['http://idx-a.test/vanish']['status'] == 'db_gone'
    assert _search(crawl, 'vanishing')[0] == 0           # not indexed since: still there
    out = tmp_path / 'deletions'
    proc = run_cli('clean', crawl, '--format', 'jsonl', '--output', str(out), *_conf(web))
    deleted = [json.loads(l)['id'] for f in glob.glob(str(out / 'deletions-*.jsonl'))
               for l in open(f)]
    assert deleted == ['http://idx-a.test/vanish']
    assert _search(crawl, 'vanishing')[0] == 0           # jsonl leaves the index alone
    proc = run_cli('clean', crawl, *_conf(web))
    assert proc.stdout.strip() == f'clean: 1 deletions in {crawl}/index (1 db_gone)'
    code, hits = _search(crawl, 'vanishing')
    assert code == 1 and hits == []
    assert _search(crawl, 'ordinary')[0] == 0            # the other pages stay
