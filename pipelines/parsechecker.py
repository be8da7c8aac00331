"""Fetch and parse one URL with the crawl's settings and show the result (Nutch's
`parsechecker`).

beamcrawl parsechecker [CRAWL_DIR] URL [--normalize] [--follow-redirects] [--dump-text] [--json]
                       [--conf FILE] [-D key=value]
Fetches URL as the fetcher does (address policy, robots.txt, size and time bounds) and parses it
with the parse stage's own code; nothing is written. Prints the fetch status, the response
headers, the content type and signature, then the parse data (status, title, outlinks after
normalizing and filtering, metadata) and, with --dump-text, the parse text (and main text).
With CRAWL_DIR, the settings the crawl directory recorded apply. Exit 0 when the page was
fetched and parsed; 2 otherwise, with one line saying why.
"""

import json
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError


def add_arguments(parser, what='parse'):
    parser.add_argument('crawl_dir', metavar='CRAWL_DIR', nargs='?',
                        help='a crawl directory: its recorded settings apply')
    parser.add_argument('url', metavar='URL')
    parser.add_argument('--normalize', action='store_true', help='normalize URL first')
    parser.add_argument('--follow-redirects', action='store_true',
                        help='follow redirects (http.redirect.max of them, or '
                             'checker.redirect.max when that is 0)')
    parser.add_argument('--json', action='store_true', help=f'print the {what} as one JSON object')
    if what == 'parse':
        parser.add_argument('--dump-text', action='store_true', help='print the parse text too')


def checked_url(args, s, now):
    """Fetches and parses args.url (check_url with CheckSettings `s`), printing what was
    followed on stderr."""
    from beamcrawl.transforms.checkers import check_url
    from beamcrawl.transforms.policy.urlparts import MalformedUrl
    url = args.url
    if args.normalize:
        try:
            url = s.policy.normalize(url)
        except MalformedUrl as e:
            raise UserError(f'{args.url}: malformed URL ({e})') from None
    if '://' not in url:
        raise UserError(f'{url}: not an absolute URL')
    print(f'fetching: {url}', file=sys.stderr)
    checked = check_url(url, s, now)
    for source, target in checked.redirects:
        print(f'redirect: {source} -> {target}', file=sys.stderr)
    return checked


def fetch_failure(checked) -> str:
    """Why the fetch gave nothing to parse, or ''."""
    fetch = checked.fetch
    if checked.content is not None and checked.content['http_code'] == 200:
        return ''
    why = f'fetch status {fetch["status"]} (protocol {fetch["protocol_status"]}'
    why += f', HTTP {fetch["http_code"]})' if fetch['http_code'] is not None else ')'
    error = fetch['metadata'].get('_error_')
    if error:
        why += f': {error}'
    if checked.unfollowed:
        why += f'; redirect to {checked.unfollowed} not followed (--follow-redirects)'
    return why


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms.settings import check_settings
    from beamcrawl.transforms.storage.segments import CRAWL_PARSE, PARSE_DATA, PARSE_TEXT
    checked = checked_url(args, check_settings(cfg, follow_redirects=args.follow_redirects), now)
    failure = fetch_failure(checked)
    data = next(iter(checked.parts.get(PARSE_DATA, [])), None)
    text = next(iter(checked.parts.get(PARSE_TEXT, [])), None)
    signature = next((r['signature'] for r in checked.parts.get(CRAWL_PARSE, [])
                      if r['status'] == 'signature'), None)
    if args.json:
        content = checked.content or {}
        print(json.dumps({
            'url': checked.url, 'redirects': checked.redirects,
            'fetch': {k: checked.fetch[k] for k in ('status', 'protocol_status', 'http_code')},
            'headers': content.get('headers', {}), 'content_type': content.get('content_type'),
            'signature': signature.hex() if signature else None,
            'parse_data': data, 'parse_text': text if args.dump_text else None,
            'counters': checked.counts}, indent=1, ensure_ascii=False, sort_keys=True))
    else:
        _print_text(checked, data, text, signature, args.dump_text)
    if failure:
        raise UserError(f'{checked.url}: {failure}')
    if data is None:
        raise UserError(f'{checked.url}: not parsed (truncated content with '
                        f'parser.skip.truncated)')
    if data['parse_status'] not in ('success', 'success_redirect'):
        why = data['metadata'].get('parse.error', '')
        raise UserError(f'{checked.url}: parse status {data["parse_status"]}'
                        + (f': {why}' if why else ''))
    return 0


def _print_text(checked, data, text, signature, dump_text):
    fetch, content = checked.fetch, checked.content
    code = f', HTTP {fetch["http_code"]}' if fetch['http_code'] is not None else ''
    print(f'fetch status: {fetch["status"]} (protocol {fetch["protocol_status"]}{code})')
    if content is not None:
        print(f'contentType: {content["content_type"]}')
        if content['truncated']:
            print('truncated: true (http.content.limit)')
        for name, value in sorted(content['headers'].items()):
            print(f'header: {name}: {value}')
    if signature:
        print(f'signature: {signature.hex()}')
    if data is None:
        return
    print('---------\nUrl\n---------------')
    print(checked.url)
    print('---------\nParseData\n---------')
    print(f'Status: {data["parse_status"]}')
    print(f'Title: {data["title"]}')
    print(f'Outlinks: {len(data["outlinks"])}')
    for link in data['outlinks']:
        print(f'  outlink: toUrl: {link["to_url"]} anchor: {link["anchor"]}')
    print('Parse Metadata:')
    for name, value in sorted(data['metadata'].items()):
        print(f'  {name}={value}')
    if dump_text and text is not None:
        print('---------\nParseText\n---------')
        print(text['text'])
        if text.get('main_text'):
            print('---------\nMainText\n---------')
            print(text['main_text'])


if __name__ == '__main__':
    sys.exit(run_command('parsechecker', sys.argv[1:]))
