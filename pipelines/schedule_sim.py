"""Simulate fetch schedules: one page (Nutch's AdaptiveFetchSchedule main()), or a whole
simulated web (the freshness lab: how fresh each schedule keeps a crawl per fetch it spends).

beamcrawl schedule-sim [--period-days D] [--steps N] [--schedule CLASS] [--quiet]
                       [--plot FILE.png] [--conf FILE] [-D db.fetch.schedule.*=...]
beamcrawl schedule-sim --population N [--change-model mixed|poisson|periodic] [--seed S]
                       [--days D] [--budget FETCHES_PER_DAY] [--round-hours H]
                       [--last-modified-share SHARE]
                       [--schedules default,adaptive,mime-adaptive,optimal,uniform,proportional,
                                    optimal-known]
                       [--sweep inc_rate=0.1:0.5:0.1,dec_rate=...] [--json] [--plot FILE.png]
"""

import itertools
import json
import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.policy.freshness import CHANGE_MODELS, REFERENCE_POLICIES


def add_arguments(parser):
    parser.add_argument('--period-days', type=float, default=30.0,
                        help='the page changes every this many days (default 30)')
    parser.add_argument('--steps', type=int, default=10000, help='simulated days (default 10000)')
    parser.add_argument('--start-interval-days', type=float, default=30.0,
                        help='the interval at the first fetch (default 30 days)')
    parser.add_argument('--schedule', default='adaptive',
                        help='db.fetch.schedule.class for the simulation (default adaptive)')
    parser.add_argument('--content-type', help='Content-Type of the page (mime-adaptive)')
    parser.add_argument('--quiet', action='store_true', help='only the two closing lines')
    parser.add_argument('--plot', metavar='FILE.png', help='draw interval and misses over time')
    lab = parser.add_argument_group('the freshness lab (with --population)')
    lab.add_argument('--population', type=int, metavar='N', help='simulate N pages')
    lab.add_argument('--change-model', choices=CHANGE_MODELS, default='mixed')
    lab.add_argument('--seed', type=int, default=1, help='random seed (default 1)')
    lab.add_argument('--days', type=float, default=365.0, help='days simulated (default 365)')
    lab.add_argument('--last-modified-share', type=float, metavar='SHARE', default=None,
                     help='share of pages whose server sends a true Last-Modified date '
                          '(default 0.5; docs/schedules.md)')
    lab.add_argument('--budget', type=float, metavar='FETCHES_PER_DAY',
                     help='fetch at most this many pages a day (default: no budget)')
    lab.add_argument('--round-hours', type=float, default=24.0,
                     help='hours between two crawl rounds (default 24)')
    lab.add_argument('--schedules', default='default,adaptive',
                     help='comma-separated: default, adaptive, mime-adaptive, optimal (the '
                          'crawler\'s) and uniform, proportional, optimal-known (references '
                          'that know the change rates)')
    lab.add_argument('--sweep', metavar='NAME=START:STOP:STEP,...',
                     help='adaptive schedule parameters to try (inc_rate, dec_rate, '
                          'min_interval, max_interval, sync_delta_rate); prints the best')
    lab.add_argument('--json', action='store_true', help='print the results as JSON')


def run(args, cfg, now, beam_args):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.policy.schedule_sim import DAY_S, simulate
    if args.population is not None:
        return _lab(args, cfg)
    schedule = settings.schedule(cfg, args.schedule,
                                 warn=lambda problem: print(problem, file=sys.stderr))
    result = simulate(schedule, period_days=args.period_days, steps=args.steps,
                      start_interval=int(args.start_interval_days * DAY_S),
                      log=None if args.quiet else print, content_type=args.content_type)
    print(f'Total missed: {result.total_missed}, max miss: {result.max_missed}')
    print(f'Page changed {result.changes} times, fetched {result.fetches} times.')
    if args.plot:
        _plot(result, args)
        print(f'plot written to {args.plot}')
    return 0


def _pyplot():
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError('--plot needs matplotlib: pip install matplotlib') from None
    return plt


def _plot(result, args):
    from beamcrawl.transforms.policy.schedule_sim import DAY_S
    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(10, 6))
    top.step(result.days, [i / DAY_S for i in result.intervals], where='post')
    top.axhline(args.period_days, color='grey', linestyle=':', label='change period')
    top.set_ylabel('fetch interval (days)')
    top.legend(loc='upper right')
    top.set_title(f'{args.schedule} schedule, page changing every {args.period_days:g} days: '
                  f'{result.fetches} fetches, {result.changes} changes, '
                  f'{result.total_missed} missed')
    bottom.bar(result.days, result.missed, width=max(1.0, args.steps / 500))
    bottom.set_ylabel('days a change waited\nbefore the fetch')
    bottom.set_xlabel('day')
    fig.tight_layout()
    fig.savefig(args.plot, dpi=100)


def _lab(args, cfg):
    from beamcrawl.transforms.policy import freshness
    if args.population < 1 or args.days <= 0 or args.round_hours <= 0 or \
            (args.budget is not None and args.budget <= 0):
        raise UserError('--population, --days, --round-hours and --budget must be positive')
    share = (freshness.LAST_MODIFIED_SHARE if args.last_modified_share is None
             else args.last_modified_share)
    if not 0 <= share <= 1:
        raise UserError('--last-modified-share must be between 0 and 1')
    population = freshness.make_population(args.population, args.change_model, args.seed,
                                           last_modified_share=share)
    names = [n.strip() for n in args.schedules.split(',') if n.strip()]
    budget = int(args.budget) if args.budget is not None else None
    # Without a budget the references spend what the default interval spends.
    reference_budget = args.budget or args.population * 86400.0 / cfg['db.fetch.interval.default']
    results = []
    for name in names:
        if name == 'optimal-known':
            results.append(_crawler('optimal', cfg, population, args, budget, known=True,
                                    plan=reference_budget))
        elif name in REFERENCE_POLICIES:
            results.append(freshness.simulate_reference(
                name, population, days=args.days, budget=reference_budget,
                round_hours=args.round_hours,
                max_days=cfg['db.fetch.schedule.optimal.max_interval'] / 86400.0))
        else:
            results.append(_crawler(name, cfg, population, args, budget))
    sweep = _sweep(args, cfg, population, budget) if args.sweep else []
    if args.json:
        print(json.dumps({'population': args.population, 'change_model': args.change_model,
                          'seed': args.seed, 'days': args.days, 'budget': args.budget,
                          'last_modified_share': share,
                          'results': [r.row() for r in results],
                          'sweep': [dict(r.row(), settings=s) for s, r in sweep]}, indent=1))
    else:
        print(f'{args.population} pages ({args.change_model} changes, seed {args.seed}, '
              f'{share:.0%} with Last-Modified), {args.days:g} days, rounds every '
              f'{args.round_hours:g} h, budget {args.budget if args.budget else "none"}')
        _table(results)
        if sweep:
            print(f'\nsweep of the adaptive schedule, best first '
                  f'({"by freshness" if budget else "by freshness per 1,000 daily fetches"}):')
            _table([r for _, r in sweep], labels=[_label(s) for s, _ in sweep])
    if args.plot:
        _lab_plot(results, args)
        print(f'plot written to {args.plot}')
    return 0


def _crawler(name, cfg, population, args, budget, overrides=None, known=False, plan=None):
    from beamcrawl.transforms import settings
    from beamcrawl.transforms.policy import freshness
    run_cfg = cfg.with_overrides(**{'db.fetch.schedule.class': name, **(overrides or {})})
    # The optimal schedule plans for --budget, else db.fetch.schedule.optimal.budget, else
    # what the default interval spends (as updatedb does: docs/schedules.md).
    # optimal-known (known) is the optimal schedule with the pages' true rates.
    plan = plan or budget or run_cfg['db.fetch.schedule.optimal.budget'] or None
    result = freshness.simulate_schedule(name, settings.update_rules(run_cfg), population,
                                         days=args.days, budget=budget,
                                         round_hours=args.round_hours, plan_budget=plan,
                                         known_rates=known)
    if known:
        result.name = 'optimal-known'
    return result


_SWEEPABLE = ('inc_rate', 'dec_rate', 'min_interval', 'max_interval', 'sync_delta_rate')


def _sweep(args, cfg, population, budget):
    from beamcrawl.transforms.policy import freshness
    try:
        grid = freshness.parse_sweep(args.sweep)
    except ValueError as e:
        raise UserError(str(e)) from None
    for name in grid:
        if name not in _SWEEPABLE:
            raise UserError(f'--sweep {name}: expected one of {", ".join(_SWEEPABLE)}')
    combos = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
    out = []
    for combo in combos:
        overrides = {f'db.fetch.schedule.adaptive.{k}': v for k, v in combo.items()}
        result = _crawler('adaptive', cfg, population, args, budget, overrides)
        out.append((combo, result))
    key = (lambda r: r.freshness) if budget else (lambda r: r.freshness_per_1k)
    return sorted(out, key=lambda item: -key(item[1]))


def _label(combo):
    return ' '.join(f'{k}={v:g}' for k, v in combo.items())


def _table(results, labels=None):
    labels = labels or [r.name for r in results]
    width = max(len(label) for label in labels + ['schedule'])
    print(f'{"schedule":<{width}}  freshness  after 90 d  age (days)  fetches/day  per 1k/day'
          f'   wasted      missed')
    for label, r in zip(labels, results):
        print(f'{label:<{width}}  {r.freshness:9.3f}  {r.steady:10.3f}  {r.age_days:10.2f}  '
              f'{r.fetches_per_day:11.0f}  {r.freshness_per_1k:10.4f}  {r.wasted:7d}  '
              f'{r.missed:10d}')


def _lab_plot(results, args):
    import numpy as np
    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7))
    for r in results:
        days = [i * args.round_hours / 24.0 for i in range(len(r.daily_freshness))]
        top.plot(days, r.daily_freshness, label=f'{r.name} ({r.fetches_per_day:.0f}/day)')
    top.set_xlabel('day')
    top.set_ylabel('share of pages current')
    top.set_ylim(0, 1)
    top.legend(loc='lower right')
    top.set_title(f'{args.population} pages, {args.change_model} changes'
                  f'{", budget " + format(args.budget, "g") if args.budget else ""}')
    for r in results:
        values = r.final_intervals_days[~np.isnan(r.final_intervals_days)]
        if len(values):
            bins = np.logspace(-3, 3, 61)
            bottom.hist(np.clip(values, 1e-3, 1e3), bins=bins, histtype='step', label=r.name)
    bottom.set_xscale('log')
    bottom.set_xlabel('revisit interval at the end (days)')
    bottom.set_ylabel('pages')
    bottom.legend(loc='upper right')
    fig.tight_layout()
    fig.savefig(args.plot, dpi=100)


if __name__ == '__main__':
    sys.exit(run_command('schedule-sim', sys.argv[1:]))
