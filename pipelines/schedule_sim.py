"""Simulate a fetch schedule on a page that changes periodically (Nutch's
AdaptiveFetchSchedule main()), to tune the rates before a real crawl.

beamcrawl schedule-sim [--period-days D] [--steps N] [--schedule CLASS] [--quiet]
                       [--plot FILE.png] [--conf FILE] [-D db.fetch.schedule.*=...]
"""

import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.transforms import settings
from beamcrawl.transforms.errors import UserError
from beamcrawl.transforms.policy.schedule_sim import DAY_S, simulate


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


def run(args, cfg, now, beam_args):
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


def _plot(result, args):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError('--plot needs matplotlib: pip install matplotlib') from None
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


if __name__ == '__main__':
    sys.exit(run_command('schedule-sim', sys.argv[1:]))
