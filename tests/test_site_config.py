"""A crawl directory remembers its site settings; BEAMCRAWL_CONF; `beamcrawl config`; a Nutch
nutch-site.xml carries over (Nutch's own keys ignored together, unknown keys one error)."""

import json
import os

import pytest

from beamcrawl.transforms.base.config import load_config, nutch_keys, read_recorded
from beamcrawl.transforms.base.errors import ConfigError
from beamcrawl.transforms.storage.layout import CrawlLayout
from tests.conftest import intranet_site, read_db, run_cli, write_seeds

NOW = '1795305600000'

NUTCH_SITE = """<?xml version="1.0"?>
<configuration>
 <property><name>http.agent.name</name><value>MyNutchBot</value></property>
 <property><name>plugin.includes</name><value>protocol-http|urlfilter-regex|parse-(html|tika)</value></property>
 <property><name>http.verbose</name><value>true</value></property>
 <property><name>solr.server.url</name><value>http://localhost:8983/solr/nutch</value></property>
 <property><name>fetcher.threads.per.host</name><value>2</value></property>
 <property><name>hadoop.tmp.dir</name><value>/tmp/hadoop</value></property>
 <property><name>mapreduce.job.reduces</name><value>4</value></property>
 <property><name>db.fetch.interval.default</name><value>86400</value></property>
</configuration>
"""


def test_nutch_keys_beamcrawl_does_not_use_are_ignored_together(tmp_path):
    site = tmp_path / 'nutch-site.xml'
    site.write_text(NUTCH_SITE)
    cfg = load_config(str(site))
    assert cfg['http.agent.name'] == 'MyNutchBot' and cfg['db.fetch.interval.default'] == 86400
    (note,) = cfg.notes
    for key in ('plugin.includes', 'http.verbose', 'solr.server.url', 'fetcher.threads.per.host',
                'hadoop.tmp.dir', 'mapreduce.job.reduces'):
        assert key in note
    assert 'ignored' in note and '6 keys' in note


def test_every_unknown_key_is_named_in_one_error(tmp_path):
    site = tmp_path / 'nutch-site.xml'
    site.write_text(NUTCH_SITE.replace(
        '</configuration>', '<property><name>http.agnt.name</name><value>x</value></property>'
        '<property><name>my.own.key</name><value>y</value></property></configuration>'))
    with pytest.raises(ConfigError) as e:
        load_config(str(site))
    message = str(e.value)
    assert message.startswith('2 unknown config keys in config file')
    assert "'http.agnt.name' (did you mean 'http.agent.name'?)" in message
    assert "'my.own.key'" in message and 'plugin.includes' not in message


def test_nested_yaml_is_told_to_be_flat(tmp_path):
    site = tmp_path / 'site.yaml'
    site.write_text('http:\n  agent:\n    name: mybot\n')
    with pytest.raises(ConfigError, match=r'must be flat.*http\.agent\.name: mybot.*nested under: '
                                          r'http'):
        load_config(str(site))


def test_the_nutch_key_list_is_nutchs():
    keys = nutch_keys()
    assert {'plugin.includes', 'http.agent.name', 'fetcher.threads.per.host',
            'solr.server.url', 'db.fetch.interval.default'} <= keys and len(keys) > 400


# -- the crawl directory remembers ----------------------------------------------------------

@pytest.mark.slow
def test_commands_without_conf_use_the_settings_the_crawl_dir_recorded(local_web, tmp_path):
    crawl = str(tmp_path / 'crawl')
    home = f'http://127.0.0.1:{local_web.port}/'
    seeds = write_seeds(tmp_path / 'seeds', [home])
    run_cli('inject', crawl, seeds, '--conf', intranet_site(tmp_path), '--now', NOW)
    recorded = read_recorded(CrawlLayout(crawl).site_conf)
    assert recorded.settings['http.address.allow'] == ['127.0.0.0/8']
    assert recorded.rule_dirs == (str(tmp_path),)
    os.remove(tmp_path / 'site.yaml')       # gone: the crawl dir alone must be enough
    for step in ('generate', 'fetch', 'parse', 'updatedb', 'invertlinks'):
        run_cli(step, crawl, '--now', NOW)
    db = read_db(crawl)
    assert db[home]['status'] == 'db_fetched'
    assert {f'{home}a', f'{home}b'} <= set(db)           # outlinks kept: not refused
    shown = json.loads(run_cli('config', crawl, '--json').stdout)
    assert shown['http.address.allow'] == {'value': ['127.0.0.0/8'],
                                           'source': f'crawl dir {recorded.path}'}
    assert shown['http.agent.name']['value'] == 'intranetbot'
    assert shown['fetcher.threads.fetch']['source'] == 'default'
    # -D wins for one command, with a warning; the record is unchanged
    proc = run_cli('config', crawl, '--set-only', '-D', 'fetcher.server.delay=2')
    assert 'fetcher.server.delay\t2.0\t-D' in proc.stdout
    assert 'differs from 0.0 recorded in' in proc.stderr
    assert read_recorded(CrawlLayout(crawl).site_conf).settings['fetcher.server.delay'] == 0.0
    # --save records it
    run_cli('config', crawl, '--save', '-D', 'fetcher.server.delay=2')
    assert read_recorded(CrawlLayout(crawl).site_conf).settings['fetcher.server.delay'] == 2.0
    assert read_recorded(CrawlLayout(crawl).site_conf).settings['http.agent.name'] == \
        'intranetbot'


def test_beamcrawl_conf_is_honoured_by_every_command(tmp_path):
    site = tmp_path / 'site.yaml'
    site.write_text('http.agent.name: envbot\ndb.score.injected: 2.5\n')
    env = {'BEAMCRAWL_CONF': str(site)}
    crawl = str(tmp_path / 'crawl')
    seeds = write_seeds(tmp_path / 'seeds', ['http://example.test/'])
    run_cli('inject', crawl, seeds, '-D', 'domain.extra.suffixes=test', env=env)
    assert read_db(crawl)['http://example.test/']['score'] == 2.5
    shown = run_cli('config', '--set-only', env=env).stdout
    assert f'http.agent.name\tenvbot\tBEAMCRAWL_CONF {site}' in shown
    assert read_recorded(CrawlLayout(crawl).site_conf).settings['db.score.injected'] == 2.5


def test_read_only_commands_record_nothing(tmp_path):
    crawl = str(tmp_path / 'crawl')
    run_cli('inject', crawl, write_seeds(tmp_path / 'seeds', ['http://example.test/']),
            '-D', 'domain.extra.suffixes=test')
    os.remove(CrawlLayout(crawl).site_conf)
    run_cli('readdb', crawl, '--stats', '-D', 'db.score.injected=3')
    assert not os.path.exists(CrawlLayout(crawl).site_conf)
