"""The index's Tantivy shards: schema, updating one shard, and searching all of them.

The index of a crawl is `CRAWL_DIR/index/shard-NNNNN/`, one Tantivy index per shard; a URL's
document lives in shard crc32(url) mod shards, so re-indexing updates it in place. Schema
(docs/crawl-dir.md, "Index"):

  url            raw string, stored, indexed (the key: delete-and-add replaces a document)
  host           raw string, stored, indexed
  title, text    text (default tokenizer), stored
  anchors        text, stored, one value per distinct inlink anchor
  content_type, signature, lang   raw strings, stored
  fetch_time     integer (epoch ms), stored
  score, boost   floats, stored; boost is fast (read for ranking)
  outlinks       integer, stored

Ranking: BM25 over title, text and anchors (title × TITLE_BOOST, anchors × ANCHOR_BOOST),
times the page's boost (floored at BOOST_FLOOR so a page without a score can still be found).
"""

import os
import shutil
from typing import Dict, Iterable, List, Optional, Tuple

import tantivy

__all__ = ['schema', 'update_shard', 'search', 'shard_counts', 'Hit', 'TITLE_BOOST',
           'ANCHOR_BOOST', 'BOOST_FLOOR', 'SEARCH_FIELDS']

TITLE_BOOST, ANCHOR_BOOST = 2.0, 3.0
BOOST_FLOOR = 0.01
SEARCH_FIELDS = ['title', 'text', 'anchors']
_HEAP = 50_000_000


def schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    for name in ('url', 'host', 'content_type', 'signature', 'lang'):
        builder.add_text_field(name, stored=True, tokenizer_name='raw')
    for name in ('title', 'text', 'anchors'):
        builder.add_text_field(name, stored=True)
    builder.add_integer_field('fetch_time', stored=True)
    builder.add_integer_field('outlinks', stored=True)
    builder.add_float_field('score', stored=True)
    builder.add_float_field('boost', stored=True, fast=True)
    return builder.build()


def update_shard(old: Optional[str], new: str, deletions: Iterable[str],
                 documents: Iterable[dict]) -> Tuple[int, int]:
    """Writes shard directory `new`: a copy of shard `old` (if any) with the documents of
    `deletions` and of `documents` removed, then `documents` added. Returns (documents added,
    deletions applied)."""
    if os.path.exists(new):
        shutil.rmtree(new)
    if old and os.path.isdir(old):
        shutil.copytree(old, new)
    else:
        os.makedirs(new)
    index = tantivy.Index(schema(), path=new)
    writer = index.writer(heap_size=_HEAP, num_threads=1)
    deleted = 0
    for url in deletions:
        writer.delete_documents_by_term('url', url)
        deleted += 1
    added = 0
    for doc in documents:
        writer.delete_documents_by_term('url', doc['url'])
        writer.add_document(tantivy.Document(**_fields(doc)))
        added += 1
    writer.commit()
    writer.wait_merging_threads()
    return added, deleted


def _fields(doc: dict) -> dict:
    fields = dict(doc)
    fields['anchors'] = list(doc.get('anchors') or [])
    return {k: v for k, v in fields.items() if v is not None and v != []}


class Hit:
    """One search result."""

    def __init__(self, score: float, doc: dict, snippet: str, snippet_html: str):
        self.score, self.doc, self.snippet, self.snippet_html = score, doc, snippet, snippet_html

    def as_json(self) -> dict:
        return {'score': self.score, 'url': self.doc['url'], 'title': self.doc['title'],
                'snippet': self.snippet, 'snippet_html': self.snippet_html,
                'boost': self.doc['boost'], 'host': self.doc['host']}


def _first(doc: tantivy.Document, name: str, default=''):
    values = doc.to_dict().get(name) or [default]
    return values[0]


def search(shard_dirs: List[str], query: str, top: int,
           highlight: Tuple[str, str] = ('[', ']')) -> List[Hit]:
    """The `top` best documents for `query` over every shard."""
    hits = []
    for directory in shard_dirs:
        index = tantivy.Index.open(directory)
        searcher = index.searcher()
        if searcher.num_docs == 0:
            continue
        parsed = index.parse_query(query, SEARCH_FIELDS,
                                   field_boosts={'title': TITLE_BOOST, 'anchors': ANCHOR_BOOST})
        snippets = tantivy.SnippetGenerator.create(searcher, parsed, index.schema, 'text')
        snippets.set_max_num_chars(200)
        for bm25, address in searcher.search(parsed, max(top * 3, 10)).hits:
            found = searcher.doc(address)
            doc = {name: _first(found, name, 0 if name in ('fetch_time', 'outlinks', 'score',
                                                           'boost') else '')
                   for name in ('url', 'host', 'title', 'content_type', 'fetch_time', 'score',
                                'boost', 'outlinks', 'signature', 'lang')}
            doc['anchors'] = found.to_dict().get('anchors') or []
            snippet = snippets.snippet_from_doc(found)
            hits.append(Hit(bm25 * max(float(doc['boost']), BOOST_FLOOR), doc,
                            _highlighted(snippet, highlight), snippet.to_html()))
    hits.sort(key=lambda h: (-h.score, h.doc['url']))
    return hits[:top]


def _highlighted(snippet, marks: Tuple[str, str]) -> str:
    """The snippet's text with its highlighted spans between `marks`. Tantivy's spans are byte
    offsets into the UTF-8 text (not character offsets: they differ after an accent)."""
    data = snippet.fragment().encode('utf-8')
    out, position = [], 0
    for span in snippet.highlighted():
        out.append(data[position:span.start].decode('utf-8', 'replace'))
        out.append(marks[0] + data[span.start:span.end].decode('utf-8', 'replace') + marks[1])
        position = span.end
    out.append(data[position:].decode('utf-8', 'replace'))
    return ' '.join(''.join(out).split())


def shard_counts(shard_dirs: List[str]) -> Dict[str, int]:
    """{shard directory: number of documents}."""
    return {d: tantivy.Index.open(d).searcher().num_docs for d in shard_dirs}
