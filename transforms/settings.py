"""Settings objects built from the configuration: the one place that maps config keys to the
typed, frozen settings each stage takes.

Every builder takes a loaded `Config` and returns a plain settings object of a policy module or
a transform (those modules never read config keys themselves). A value that a key's type check
let through but that makes no sense together with others (a bad rule file, two keys that
contradict each other) raises ConfigError here, with one line naming the key or file.
"""

import contextlib
import logging
from typing import TYPE_CHECKING, Callable, Iterator, Optional, Tuple

from beamcrawl.transforms.base.errors import ConfigError
from beamcrawl.transforms.policy.addresses import AddressPolicy
from beamcrawl.transforms.policy.domains import DomainHelper
from beamcrawl.transforms.policy.expressions import compile_expression
from beamcrawl.transforms.policy.generate import GenerateSettings
from beamcrawl.transforms.policy.hostdb import HostDbSettings, HostRules, is_field_name
from beamcrawl.transforms.policy.indexing import IndexRules
from beamcrawl.transforms.policy.inject import InjectRules
from beamcrawl.transforms.policy.linkdb import LinkRules
from beamcrawl.transforms.policy.linkrank import GraphRules, RankParams
from beamcrawl.transforms.policy.normalize import BasicNormalizer
from beamcrawl.transforms.policy.outlinks import OutlinkRules
from beamcrawl.transforms.policy.robots import agent_names
from beamcrawl.transforms.policy.schedule import (AdaptiveFetchSchedule, DefaultFetchSchedule,
                                                  FetchSchedule, MimeAdaptiveFetchSchedule,
                                                  parse_host_intervals, parse_mime_rates,
                                                  schedule_kind)
from beamcrawl.transforms.policy.scoring import OpicScoring
from beamcrawl.transforms.policy.signature import signature_kind
from beamcrawl.transforms.policy.updatedb import UpdateRules
from beamcrawl.transforms.policy.urlrules import RegexFilter, RegexNormalizer, RuleError
from beamcrawl.transforms.policy.urls import UrlPolicy

if TYPE_CHECKING:      # imported where they are built: the fetcher, the parser and the sitemap
    # parser (requests, lxml) cost about 0.1 s to import, which other commands do not pay
    from beamcrawl.transforms.checkers import CheckSettings
    from beamcrawl.transforms.fetcher.http import HttpSettings
    from beamcrawl.transforms.fetcher.settings import FetcherSettings
    from beamcrawl.transforms.parse import ParseSettings
    from beamcrawl.transforms.policy.sitemaps import SitemapSettings

__all__ = ['url_policy', 'address_policy', 'index_rules', 'inject_rules', 'generate_settings',
           'fetcher_settings',
           'http_settings', 'parse_settings', 'schedule', 'scoring', 'update_rules',
           'link_rules', 'outlink_rules', 'hostdb_settings', 'host_rules', 'domains', 'graph_rules',
           'rank_params', 'check_settings']

log = logging.getLogger('beamcrawl')


@contextlib.contextmanager
def _config_errors() -> Iterator[None]:
    """The one error wrapper: a rule or value problem becomes a one-line ConfigError."""
    try:
        yield
    except RuleError as e:
        raise ConfigError(f'rule file error: {e}') from None
    except ValueError as e:
        raise ConfigError(str(e)) from None


def url_policy(cfg) -> UrlPolicy:
    """The URL normalizers and filters (rule files are read here, in the driver)."""
    with _config_errors():
        domains = DomainHelper(cfg['domain.extra.suffixes'])
        normalize_text = cfg.resource_text('urlnormalizer.regex.file')
        filter_text = cfg.resource_text('urlfilter.regex.file')
        return UrlPolicy(
            basic=BasicNormalizer(cfg['urlnormalizer.basic.host.idn'],
                                  cfg['urlnormalizer.basic.host.trim-trailing-dot']),
            regex_normalizer=(RegexNormalizer.parse(normalize_text,
                                                    cfg['urlnormalizer.regex.file'])
                              if normalize_text is not None else None),
            loop_count=cfg['urlnormalizer.loop.count'],
            regex_filter=(RegexFilter.parse(filter_text, domains, cfg['urlfilter.regex.file'])
                          if filter_text is not None else None),
            schemes=cfg['urlfilter.scheme.allowed'],
            domains=domains, address=address_policy(cfg))


def address_policy(cfg) -> AddressPolicy:
    """Where the crawler may connect (http.address.deny / http.address.allow)."""
    with _config_errors():
        return AddressPolicy(cfg['http.address.deny'], cfg['http.address.allow'])


def inject_rules(cfg, *, overwrite: bool = False, update: bool = False) -> InjectRules:
    """The Injector's merge settings; the command-line flags can only turn overwrite/update on."""
    return InjectRules(score_injected=cfg['db.score.injected'],
                       interval_default=cfg['db.fetch.interval.default'],
                       overwrite=overwrite or cfg['db.injector.overwrite'],
                       update=update or cfg['db.injector.update'],
                       purge_gone=cfg['db.update.purge.404'])


def sitemap_settings(cfg) -> 'SitemapSettings':
    """What the `sitemap` command reads sitemaps with (transforms/sitemap.py)."""
    from beamcrawl.transforms.policy.sitemaps import SitemapBounds, SitemapLimits, SitemapSettings
    return SitemapSettings(
        limits=SitemapLimits(max_bytes=cfg['sitemap.size.max'],
                             max_urls=cfg['sitemap.urls.max'],
                             strict=cfg['sitemap.strict.parsing']),
        depth_max=cfg['sitemap.index.depth.max'],
        bounds=SitemapBounds(count_max=cfg['sitemap.count.max'],
                             host_count_max=cfg['sitemap.host.count.max'],
                             host_time_max=cfg['sitemap.host.time.max'],
                             time_max=cfg['sitemap.time.max']),
        normalize=cfg['sitemap.url.normalize'],
        default_xml=cfg['sitemap.url.default.sitemap.xml'],
        interval_default=cfg['db.fetch.interval.default'],
        interval_min=cfg['db.fetch.schedule.adaptive.min_interval'],
        interval_max=cfg['db.fetch.interval.max'])


def generate_settings(cfg) -> GenerateSettings:
    with _config_errors():
        return GenerateSettings.create(
            max_interval=cfg['db.fetch.interval.max'], gen_delay=cfg['crawl.gen.delay'],
            restrict_status=cfg['generate.restrict.status'],
            min_score=cfg['generate.min.score'], min_interval=cfg['generate.min.interval'],
            gain_prior_rate=(86400.0 / cfg['db.fetch.interval.default']
                             if schedule_kind(cfg['db.fetch.schedule.class']) == 'optimal'
                             else 0.0),
            gain_max_days=cfg['db.fetch.schedule.optimal.max_interval'] / 86400.0)


def hostdb_settings(cfg, *, check_new: bool = False, check_known: bool = False,
                    check_failed: bool = False, force: bool = False) -> HostDbSettings:
    """What updatehostdb aggregates and looks up; the flags add to the hostdb.check.* keys."""
    with _config_errors():
        percentiles = tuple(cfg['hostdb.percentiles'])
        if any(not 0 < p <= 100 for p in percentiles):
            raise ValueError(f'hostdb.percentiles={list(percentiles)}: each in 1..100')
        return HostDbSettings(
            numeric_fields=tuple(cfg['hostdb.numeric.fields']),
            string_fields=tuple(cfg['hostdb.string.fields']), percentiles=percentiles,
            recheck_interval=cfg['hostdb.recheck.interval'],
            sitemaps_max=cfg['hostdb.sitemaps.max'],
            check_new=check_new or cfg['hostdb.check.new'],
            check_known=check_known or cfg['hostdb.check.known'],
            check_failed=check_failed or cfg['hostdb.check.failed'],
            force=force or cfg['hostdb.force.check'])


def host_rules(cfg) -> HostRules:
    """generate's per-host rules from a hostdb (its expressions compiled here: a bad one is a
    config error before anything is read)."""
    def compiled(key, text):
        text = text.strip()
        return compile_expression(text, is_field_name, key) if text else None

    with _config_errors():
        max_count = compiled('generate.max.count.expr', cfg['generate.max.count.expr'])
        delay = compiled('generate.fetch.delay.expr', cfg['generate.fetch.delay.expr'])
        if max_count is not None and cfg['generate.count.mode'] != 'host':
            raise ValueError('generate.max.count.expr needs generate.count.mode=host (the '
                             'hostdb has hosts, not domains)')
        return HostRules(skip_failures=cfg['generate.hostdb.skip.failures'],
                         recheck_interval=cfg['hostdb.recheck.interval'],
                         max_count=max_count, fetch_delay=delay)


def fetcher_settings(cfg, threads: Optional[int] = None) -> 'FetcherSettings':
    """The fetch engine's settings; `threads` (--threads) overrides fetcher.threads.fetch."""
    from beamcrawl.transforms.fetcher.settings import FetcherSettings
    delay = cfg['fetcher.server.delay']
    return FetcherSettings(
        threads=threads or cfg['fetcher.threads.fetch'],
        threads_per_queue=cfg['fetcher.threads.per.queue'],
        server_delay=delay, min_delay=cfg['fetcher.server.min.delay'],
        min_crawl_delay=(delay if cfg['fetcher.min.crawl.delay'] < 0
                         else cfg['fetcher.min.crawl.delay']),
        max_crawl_delay=cfg['fetcher.max.crawl.delay'],
        queue_mode=cfg['fetcher.queue.mode'],
        queue_depth=cfg['fetcher.queue.depth.multiplier'],
        redirect_max=cfg['http.redirect.max'],
        robots_redirect_max=cfg['http.robots.redirect.max'],
        allow_403=cfg['http.robots.403.allow'],
        agents=agent_names(cfg['http.agent.name'], cfg['http.robots.agents']),
        time_limit_s=(cfg['fetcher.timelimit.mins'] * 60.0
                      if cfg['fetcher.timelimit.mins'] >= 0 else -1),
        max_exceptions=cfg['fetcher.max.exceptions.per.queue'],
        exception_delay=(delay if cfg['fetcher.exceptions.per.queue.delay'] < 0
                         else cfg['fetcher.exceptions.per.queue.delay']),
        throughput_pages=cfg['fetcher.throughput.threshold.pages'],
        throughput_retries=cfg['fetcher.throughput.threshold.retries'],
        throughput_after_s=cfg['fetcher.throughput.threshold.check.after'] * 60.0,
        store_content=cfg['fetcher.store.content'],
        store_warc=cfg['fetcher.store.warc'],
        max_url_length=cfg['db.max.outlink.length'],
        progress_s=cfg['fetcher.progress.seconds'],
        journal_roll_s=cfg['fetcher.journal.roll.seconds'],
        journal_batch_s=cfg['fetcher.journal.batch.seconds'])


def http_settings(cfg, threads: int) -> 'HttpSettings':
    """The HTTP client's settings for a fetcher with `threads` threads."""
    from beamcrawl.transforms.fetcher.http import HttpSettings
    agent = cfg['http.agent.name']
    if cfg['http.agent.version']:
        agent += '/' + cfg['http.agent.version']
    details = [d for d in (cfg['http.agent.description'], cfg['http.agent.url'],
                           cfg['http.agent.email']) if d]
    if details:
        agent += f' ({"; ".join(details)})'
    proxy = (f'http://{cfg["http.proxy.host"]}:{cfg["http.proxy.port"]}'
             if cfg['http.proxy.host'] else None)
    return HttpSettings(user_agent=agent, accept=cfg['http.accept'],
                        accept_language=cfg['http.accept.language'],
                        timeout_s=cfg['http.timeout'] / 1000.0,
                        deadline_s=cfg['http.request.deadline'] / 1000.0,
                        address=address_policy(cfg),
                        content_limit=cfg['http.content.limit'],
                        hard_limit=cfg['http.content.hard.limit'], proxy=proxy,
                        if_modified_since=cfg['http.enable.if.modified.since.header'],
                        pool_size=max(10, threads), keep_exchange=cfg['fetcher.store.warc'])


def outlink_rules(cfg) -> OutlinkRules:
    return OutlinkRules(max_outlinks=cfg['db.max.outlinks.per.page'],
                        max_length=cfg['db.max.outlink.length'],
                        ignore_internal=cfg['db.ignore.internal.links'],
                        ignore_external=cfg['db.ignore.external.links'],
                        by_domain=cfg['db.ignore.external.links.mode'] == 'byDomain')


def scoring(cfg) -> OpicScoring:
    return OpicScoring(link_internal=cfg['db.score.link.internal'],
                       link_external=cfg['db.score.link.external'],
                       count_filtered=cfg['db.score.count.filtered'])


def parse_settings(cfg) -> 'ParseSettings':
    from beamcrawl.transforms.parse import ParseSettings
    with _config_errors():
        return ParseSettings(
            signature_kind=signature_kind(cfg['db.signature.class']),
            min_token_len=cfg['db.signature.text_profile.min_token_len'],
            quant_rate=cfg['db.signature.text_profile.quant_rate'],
            skip_truncated=cfg['parser.skip.truncated'], timeout_s=cfg['parser.timeout'],
            interval_default=cfg['db.fetch.interval.default'], outlinks=outlink_rules(cfg),
            normalize=cfg['parse.normalize.urls'], filter_urls=cfg['parse.filter.urls'],
            agents=agent_names(cfg['http.agent.name'], cfg['http.robots.agents']),
            scoring=scoring(cfg), main_text=cfg['parser.main.text.extractor'],
            max_expanded=cfg['parser.document.max.expanded'],
            document_memory=cfg['parser.document.memory'])


def schedule(cfg, kind: Optional[str] = None,
             warn: Callable[[str], None] = log.warning) -> FetchSchedule:
    """The configured fetch schedule (`kind` overrides db.fetch.schedule.class). Bad lines of
    its rule files are reported through `warn` and skipped, as Nutch does."""
    with _config_errors():
        schedule_, problems = _schedule(cfg, schedule_kind(kind or
                                                           cfg['db.fetch.schedule.class']))
    for problem in problems:
        warn(problem)
    return schedule_


def _schedule(cfg, kind: str) -> Tuple[FetchSchedule, list]:
    base = dict(default_interval=cfg['db.fetch.interval.default'],
                max_interval=cfg['db.fetch.interval.max'])
    if kind == 'default':
        return DefaultFetchSchedule(**base), []
    if kind == 'optimal':
        from beamcrawl.transforms.policy.optimal import OptimalFetchSchedule
        return OptimalFetchSchedule(
            **base, min_interval_s=cfg['db.fetch.schedule.optimal.min_interval'],
            max_interval_s=cfg['db.fetch.schedule.optimal.max_interval'],
            history=cfg['db.fetch.schedule.optimal.history'],
            prior_sigma=cfg['db.fetch.schedule.optimal.prior.sigma'],
            due_factor=cfg['db.fetch.schedule.optimal.due.factor']), []
    lo, hi = (cfg['db.fetch.schedule.adaptive.min_interval'],
              cfg['db.fetch.schedule.adaptive.max_interval'])
    problems: list = []
    hosts: dict = {}
    text = cfg.resource_text('db.fetch.schedule.adaptive.host.file')
    if text is not None:
        hosts, problems = parse_host_intervals(
            text, min_interval_s=lo, max_interval_s=hi,
            source=cfg['db.fetch.schedule.adaptive.host.file'])
    adaptive = dict(base, inc_rate=cfg['db.fetch.schedule.adaptive.inc_rate'],
                    dec_rate=cfg['db.fetch.schedule.adaptive.dec_rate'], min_interval_s=lo,
                    max_interval_s=hi, sync_delta=cfg['db.fetch.schedule.adaptive.sync_delta'],
                    sync_delta_rate=cfg['db.fetch.schedule.adaptive.sync_delta_rate'],
                    host_intervals=hosts)
    if kind == 'adaptive':
        return AdaptiveFetchSchedule(**adaptive), problems
    rates, mime_problems = parse_mime_rates(cfg.resource_text('db.fetch.schedule.mime.file') or '',
                                            source=cfg['db.fetch.schedule.mime.file'])
    return MimeAdaptiveFetchSchedule(mime_rates=rates, **adaptive), problems + mime_problems


def update_rules(cfg, *, no_additions: bool = False) -> UpdateRules:
    """The CrawlDb merge rules (--no-additions turns additions off)."""
    return UpdateRules(schedule=schedule(cfg), scoring=scoring(cfg),
                       retry_max=cfg['db.fetch.retry.max'],
                       max_interval=cfg['db.fetch.interval.max'],
                       additions_allowed=cfg['db.update.additions.allowed'] and not no_additions,
                       max_inlinks=cfg['db.update.max.inlinks'])


def link_rules(cfg) -> LinkRules:
    with _config_errors():
        return LinkRules.create(ignore_internal=cfg['linkdb.ignore.internal.links'],
                                ignore_external=cfg['linkdb.ignore.external.links'],
                                max_anchor_length=cfg['linkdb.max.anchor.length'],
                                max_inlinks=cfg['linkdb.max.inlinks'])


def check_settings(cfg, *, follow_redirects: bool = False) -> 'CheckSettings':
    """What parsechecker, indexchecker and robotsparser run with (transforms/checkers.py):
    with follow_redirects, http.redirect.max redirects are followed, or checker.redirect.max
    when that is 0."""
    from beamcrawl.transforms.checkers import CheckSettings
    follow = (cfg['http.redirect.max'] or cfg['checker.redirect.max']) if follow_redirects else 0
    return CheckSettings(fetcher=fetcher_settings(cfg, 1), http=http_settings(cfg, 1),
                         policy=url_policy(cfg), parse=parse_settings(cfg),
                         update=update_rules(cfg), index=index_rules(cfg),
                         interval_default=cfg['db.fetch.interval.default'],
                         score_injected=cfg['db.score.injected'], follow=follow)
def domains(cfg) -> DomainHelper:
    """Registrable domains, with the configured extra suffixes."""
    return DomainHelper(cfg['domain.extra.suffixes'])


def graph_rules(cfg) -> GraphRules:
    """webgraph's link rules (link.ignore.*, link.delete.gone)."""
    return GraphRules(ignore_internal_host=cfg['link.ignore.internal.host'],
                      ignore_internal_domain=cfg['link.ignore.internal.domain'],
                      limit_page=cfg['link.ignore.limit.page'],
                      limit_domain=cfg['link.ignore.limit.domain'],
                      delete_gone=cfg['link.delete.gone'])


def rank_params(cfg, nodes: int) -> RankParams:
    """LinkRank's parameters for a graph of `nodes` nodes (ConfigError for a damping factor
    outside 0..1)."""
    with _config_errors():
        return RankParams.create(damping=cfg['link.analyze.damping.factor'],
                                 initial=cfg['link.analyze.initial.score'], nodes=nodes,
                                 limit_page=cfg['link.ignore.limit.page'],
                                 limit_domain=cfg['link.ignore.limit.domain'])


def index_rules(cfg) -> IndexRules:
    return IndexRules(score_power=cfg['indexer.score.power'],
                      max_text_length=cfg['indexer.max.content.length'],
                      max_anchors=cfg['indexer.max.anchors'],
                      text_field=cfg['indexer.text.field'])
