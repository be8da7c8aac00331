"""Benchmark behind the choice of HTML parser: lxml vs selectolax on the same pages, doing the
work parse needs (parse, title, text without script/style, links with attributes and text).

    python bench/bench_html_parsers.py [--pages 2000]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pages import pages  # noqa: E402


def with_lxml(html: bytes):
    import lxml.html
    root = lxml.html.fromstring(html, parser=lxml.html.HTMLParser(encoding='utf-8'))
    title = root.findtext('.//title')
    for bad in root.iter('script', 'style'):
        bad.drop_tree()
    text = ' '.join(root.text_content().split())
    links = [(a.get('href'), a.text_content()) for a in root.iter('a', 'img', 'link')]
    return title, len(text), len(links)


def with_selectolax(html: bytes):
    from selectolax.lexbor import LexborHTMLParser
    tree = LexborHTMLParser(html)
    title = tree.css_first('title').text() if tree.css_first('title') else ''
    tree.strip_tags(['script', 'style'])
    text = ' '.join((tree.body.text(separator=' ') if tree.body else '').split())
    links = [(n.attributes.get('href'), n.text()) for n in tree.css('a, img, link')]
    return title, len(text), len(links)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--pages', type=int, default=2000)
    args = parser.parse_args()
    docs = [html for html, _ in pages(args.pages)]
    mb = sum(map(len, docs)) / 1e6
    for name, fn in (('lxml', with_lxml), ('selectolax (lexbor)', with_selectolax)):
        try:
            start = time.perf_counter()
            for html in docs:
                fn(html)
            wall = time.perf_counter() - start
            print(f'{name:<22} {len(docs) / wall:7.0f} docs/s  {mb / wall:6.1f} MB/s')
        except ImportError:
            print(f'{name:<22} not installed')


if __name__ == '__main__':
    main()
