"""The demo web of `beamcrawl demo` (and ./run_local.sh): three small hosts with robots rules,
a Crawl-delay, redirects, a page that changes on every visit, broken and gone links."""

import itertools

from beamcrawl.transforms.testing.web import Page, html_page, redirect

__all__ = ['demo_sites', 'DEMO_SEEDS']

DEMO_SEEDS = """# demo seeds: a URL per line, then optional TAB-separated key=value metadata
http://www.demo.test/
http://blog.demo.test/\tscore=2.0\ttopic=news
http://shop.demo.test/catalog?page=1
HTTP://WWW.DEMO.TEST:80/about/../\tcomment=the first seed again, after normalization
http://www.demo.test/logo.png
"""


def _text(topic: str) -> str:
    return f'<p>This page is about {topic}. ' + 'It has a little text to index. ' * 5 + '</p>'


def demo_sites():
    visits = itertools.count(1)

    def news(request):
        n = next(visits)
        return html_page('News', f'<p>Edition {n}: the news changes on every visit.</p>',
                         links=['/', 'http://blog.demo.test/post/1'])

    www = {
        '/robots.txt': Page(body=b'User-agent: *\nDisallow: /private/\n',
                            content_type='text/plain'),
        '/': html_page('Demo home', _text('the demo'), links=[
            '/about.html', '/news.html', '/private/secret.html', '/old-page', '/missing.html',
            'http://blog.demo.test/', 'http://shop.demo.test/catalog?page=1', '/logo.png',
            'mailto:demo@demo.test']),
        '/about.html': html_page('About', _text('us'), links=['/', '/team.html']),
        '/team.html': html_page('Team', _text('the team'), links=['/about.html']),
        '/news.html': news,
        '/private/secret.html': html_page('Secret', 'robots.txt forbids this page'),
        '/old-page': redirect('/about.html', 301),
    }
    blog = {'/robots.txt': Page(status=404),
            '/': html_page('Blog', _text('the blog'),
                           links=[f'/post/{i}' for i in range(1, 5)] + ['http://www.demo.test/'])}
    for i in range(1, 5):
        blog[f'/post/{i}'] = html_page(f'Post {i}', _text(f'post {i}'), links=[
            f'/post/{i - 1}' if i > 1 else '/', f'/post/{i + 1}' if i < 4 else '/',
            'http://www.demo.test/about.html'])
    shop = {'/robots.txt': Page(body=b'User-agent: *\nCrawl-delay: 1\n',
                                content_type='text/plain'),
            '/discontinued': redirect('/catalog?page=1', 302),
            '/item/3': Page(status=410, body=b'gone')}
    for page in range(1, 4):
        shop[f'/catalog?page={page}'] = html_page(f'Catalog page {page}', _text('products'), links=[
            f'/catalog?page={page + 1}' if page < 3 else '/discontinued',
            f'/item/{page}', 'http://www.demo.test/'])
    for item in (1, 2):
        shop[f'/item/{item}'] = html_page(f'Item {item}', _text(f'item {item}'),
                                          links=['/catalog?page=1'])
    return {'www.demo.test': www, 'blog.demo.test': blog, 'shop.demo.test': shop}
