"""Refusals by our own settings are not server outcomes: a URL our address policy refuses is not
db_gone, and a step in which local settings refuse every URL says so (naming the key) and exits
2."""

import pytest

from tests.conftest import intranet_site, read_db, run_cli, write_seeds

NOW = '1795305600000'


@pytest.mark.slow
def test_a_fetch_refused_by_the_local_policy_says_so_and_loses_nothing(local_web, tmp_path):
    crawl = str(tmp_path / 'crawl')
    home = f'http://127.0.0.1:{local_web.port}/'
    run_cli('inject', crawl, write_seeds(tmp_path / 'seeds', [home]),
            '--conf', intranet_site(tmp_path), '--now', NOW)
    run_cli('generate', crawl, '--now', NOW)
    proc = run_cli('fetch', crawl, '--now', NOW, '-D', 'http.address.allow=', check=False)
    assert proc.returncode == 2 and local_web.log == []
    line = proc.stderr.strip().splitlines()[-1]
    assert 'every URL of the segment was refused by local settings' in line
    assert 'http.address.allow' in line and 'Traceback' not in proc.stderr
    run_cli('updatedb', crawl, '--now', NOW)
    record = read_db(crawl)[home]
    assert record['status'] == 'db_unfetched' and record['retries'] == 0   # not db_gone
    run_cli('generate', crawl, '--now', NOW)                               # due again
    run_cli('fetch', crawl, '--now', NOW)
    run_cli('updatedb', crawl, '--now', NOW)
    assert read_db(crawl)[home]['status'] == 'db_fetched'


def test_inject_counts_refused_seeds_and_fails_when_all_are(tmp_path):
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://10.1.2.3/', 'http://localhost/',
                                              'http://example.test/'])
    proc = run_cli('inject', crawl, seeds, '-D', 'domain.extra.suffixes=test')
    assert '2 refused by the address policy' in proc.stdout
    seeds = write_seeds(tmp_path / 'seeds2', ['http://10.1.2.3/', 'http://192.168.0.1/'])
    proc = run_cli('inject', str(tmp_path / 'crawl2'), seeds, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].endswith(
        'every seed was refused by local settings: 2 by the address policy (allow ranges with '
        'http.address.allow); none was injected')


def test_generate_fails_when_local_settings_refuse_every_url(tmp_path):
    crawl = str(tmp_path / 'crawl')
    run_cli('inject', crawl, write_seeds(tmp_path / 'seeds', ['http://example.test/']),
            '-D', 'domain.extra.suffixes=test', '--now', NOW)
    (tmp_path / 'none.txt').write_text('-.\n')
    proc = run_cli('generate', crawl, '--now', NOW, '-D',
                   f'urlfilter.regex.file={tmp_path / "none.txt"}', check=False)
    assert proc.returncode == 2 and 'by the URL filters (urlfilter.regex.file' in proc.stderr
    earlier = str(int(NOW) - 86400000)                  # nothing due yet: exit 1, as before
    assert run_cli('generate', crawl, '--now', earlier, check=False).returncode == 1
