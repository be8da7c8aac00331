"""Freshness against budget: the freshness lab (beamcrawl schedule-sim) run at several budgets
for the default, adaptive and optimal schedules (and the optimal one with the true rates),
printed as a table and drawn as a PNG (docs/schedules.md).

    python bench/lab_budget.py [--population 20000] [--change-model mixed] [--days 365]
                               [--budgets 0.01,0.02,0.033,0.05,0.1,0.2] [--plot FILE.png]

Budgets are fetches a day per page (0.033: what a 30-day interval spends). Prints the wall
time, CPU seconds and peak RSS of the whole run.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

SCHEDULES = ['default', 'adaptive', 'optimal', 'uniform', 'optimal-known']


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--population', type=int, default=20000)
    parser.add_argument('--change-model', default='mixed')
    parser.add_argument('--days', type=float, default=365)
    parser.add_argument('--budgets', default='0.01,0.02,0.033,0.05,0.1,0.2')
    parser.add_argument('--plot', help='write the chart to this PNG')
    args = parser.parse_args()
    start = time.time()
    budgets = [float(b) for b in args.budgets.split(',')]
    rows = {name: [] for name in SCHEDULES}
    for share in budgets:
        budget = share * args.population
        proc = subprocess.run(
            [sys.executable, '-m', 'beamcrawl.pipelines.cli', 'schedule-sim', '--population',
             str(args.population), '--change-model', args.change_model, '--days', str(args.days),
             '--budget', f'{budget:g}', '--schedules', ','.join(SCHEDULES), '--json'],
            capture_output=True, text=True, check=True)
        for result in json.loads(proc.stdout)['results']:
            rows[result['name']].append((result['fetches_per_day'] / args.population,
                                         result['freshness']))
    print(f'{args.population} pages, {args.change_model} changes, {args.days:g} days')
    print('budget/page/day  ' + '  '.join(f'{n:>13}' for n in SCHEDULES))
    for i, share in enumerate(budgets):
        print(f'{share:15.3f}  ' + '  '.join(f'{rows[n][i][1]:13.3f}' for n in SCHEDULES))
    if args.plot:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 5))
        for name in SCHEDULES:
            style = ':' if name in ('uniform', 'optimal-known') else '-'
            ax.plot([f for f, _ in rows[name]], [v for _, v in rows[name]], style, marker='o',
                    label=name)
        ax.set_xscale('log')
        ax.set_xlabel('fetches a day per page (spent)')
        ax.set_ylabel('freshness (share of pages current, time average)')
        ax.set_title(f'{args.population} simulated pages, {args.change_model} changes, '
                     f'{args.days:g} days')
        ax.legend(loc='lower right')
        ax.grid(True, which='both', alpha=0.3)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=80)
        print(f'plot written to {args.plot}')
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f'wall {time.time() - start:.1f} s, CPU {usage.ru_utime + usage.ru_stime:.1f} s, '
          f'peak RSS {usage.ru_maxrss / 1024:.0f} MB')


if __name__ == '__main__':
    main()
