"""The freshness lab: populations, the simulation through updatedb's merge, the references,
the sweep, and the command."""

import json

import numpy as np
import pytest

from beamcrawl.transforms import settings
from beamcrawl.transforms.base.config import load_config
from beamcrawl.transforms.policy import freshness
from tests.conftest import run_cli


def _rules(schedule='default', **overrides):
    return settings.update_rules(load_config(overrides={'db.fetch.schedule.class': schedule,
                                                        **overrides}))


def test_mixed_population_has_never_and_hourly_pages():
    pop = freshness.make_population(20000, 'mixed', seed=3)
    never = np.mean(pop.rate == 0)
    hourly = np.mean(pop.rate == 24.0)
    assert 0.18 < never < 0.22 and 0.04 < hourly < 0.06
    assert np.all(pop.periodic[pop.rate == 24.0])
    assert np.median(1 / pop.rate[(pop.rate > 0) & (pop.rate < 24)]) == pytest.approx(10, rel=0.1)


def test_the_lab_dates_changes_as_servers_with_last_modified_do():
    """Last-Modified in the lab: the date of the last change before the fetch, on the pages
    whose server sends it, for a first fetch and a fetch that finds the page changed."""
    none = freshness.make_population(1000, 'mixed', seed=2)
    assert not none.last_modified.any()
    pop = freshness.make_population(20000, 'poisson', seed=2, last_modified_share=0.5)
    assert 0.48 < pop.last_modified.mean() < 0.52
    # drawn apart: the same change rates with and without Last-Modified
    assert np.array_equal(pop.rate, freshness.make_population(20000, 'poisson', seed=2).rate)
    truth = freshness._Truth(pop, np.random.default_rng(0))
    idx = np.arange(pop.size)
    changed, _, age = truth.fetch(idx, 100.0)
    assert not changed.any()
    assert np.isnan(age[~pop.last_modified]).all()
    # the time back to the last change of a Poisson page: exponential, mean 1/λ
    dated = pop.last_modified
    assert np.mean(age[dated] * pop.rate[dated]) == pytest.approx(1.0, rel=0.05)
    changed, _, age = truth.fetch(idx, 130.0)
    assert np.isnan(age[~changed]).all() and not np.isnan(age[changed & dated]).any()
    assert (age[changed & dated] <= 30.0).all()               # after the previous fetch
    periodic = freshness.make_population(50, 'periodic', seed=2, last_modified_share=1.0)
    truth = freshness._Truth(periodic, np.random.default_rng(0))
    period, phase = 1 / periodic.rate, periodic.phase
    _, _, age = truth.fetch(np.arange(50), 1000.0)
    assert np.allclose(age, (1000.0 - phase) % period)


def test_the_default_schedule_refetches_every_page_every_30_days():
    pop = freshness.make_population(500, 'poisson', seed=1)
    result = freshness.simulate_schedule('default', _rules(), pop, days=90, budget=None)
    assert result.fetches == 500 * 3                     # days 0, 30 and 60
    assert set(np.round(result.final_intervals_days, 6)) == {30.0}
    assert 0.0 <= min(result.daily_freshness) <= max(result.daily_freshness) <= 1.0
    # everything just fetched: fresh on day 0 until its first change (averaged over the day)
    expected = np.mean(-np.expm1(-pop.rate) / pop.rate)
    assert result.daily_freshness[0] == pytest.approx(expected, abs=0.03)


def test_a_page_that_never_changes_is_a_wasted_fetch_and_always_fresh():
    pop = freshness.Population(rate=np.zeros(10), periodic=np.zeros(10, dtype=bool),
                               phase=np.zeros(10), seed=1)
    result = freshness.simulate_schedule('default', _rules(), pop, days=61, budget=None)
    assert result.freshness == 1.0 and result.age_days == 0.0
    assert result.wasted == 20 and result.missed == 0     # the refetches on days 30 and 60


def test_the_adaptive_schedule_adapts_through_updatedb():
    # Pages changing every day get shorter intervals, pages that never change longer ones:
    # both come from merge_url and the configured AdaptiveFetchSchedule.
    rate = np.array([1.0] * 50 + [0.0] * 50)
    pop = freshness.Population(rate=rate, periodic=np.ones(100, dtype=bool),
                               phase=np.full(100, 0.5), seed=1)
    result = freshness.simulate_schedule(
        'adaptive', _rules('adaptive', **{'db.fetch.interval.default': 4 * 86400}), pop,
        days=120, budget=None)
    changing, static = result.final_intervals_days[:50], result.final_intervals_days[50:]
    assert changing.max() < 4 < static.min()


def test_a_budget_is_never_exceeded():
    pop = freshness.make_population(3000, 'mixed', seed=2)
    for name in ('default', 'adaptive'):
        result = freshness.simulate_schedule(name, _rules(name), pop, days=60, budget=50)
        assert result.fetches <= 50 * 60
    reference = freshness.simulate_reference('uniform', pop, days=60, budget=50)
    assert reference.fetches <= 50 * 60


def test_same_seed_same_numbers():
    pop = freshness.make_population(2000, 'mixed', seed=7)
    one = freshness.simulate_schedule('adaptive', _rules('adaptive'), pop, days=60, budget=100)
    two = freshness.simulate_schedule('adaptive', _rules('adaptive'), pop, days=60, budget=100)
    assert one.row() == two.row()


def test_uniform_beats_proportional_for_poisson_pages():
    # Cho and Garcia-Molina, "Synchronizing a database to improve freshness" (SIGMOD 2000):
    # for pages changing as Poisson processes, revisiting every page at the same rate keeps
    # the database fresher than revisiting each in proportion to its change rate.
    pop = freshness.make_population(4000, 'poisson', seed=11)
    uniform = freshness.simulate_reference('uniform', pop, days=120, budget=150)
    proportional = freshness.simulate_reference('proportional', pop, days=120, budget=150)
    assert abs(uniform.fetches - proportional.fetches) < 0.05 * uniform.fetches
    assert uniform.freshness > proportional.freshness + 0.1


@pytest.mark.parametrize('text,expected', [
    ('inc_rate=0.1:0.3:0.1', {'inc_rate': [0.1, 0.2, 0.3]}),
    ('inc_rate=0.2:0.2:0.1,dec_rate=0.1:0.3:0.2', {'inc_rate': [0.2], 'dec_rate': [0.1, 0.3]}),
])
def test_parse_sweep(text, expected):
    assert freshness.parse_sweep(text) == expected


@pytest.mark.parametrize('text', ['inc_rate', 'inc_rate=0.1:0.2', 'inc_rate=0.3:0.1:0.1',
                                  'inc_rate=0.1:0.3:0'])
def test_parse_sweep_rejects(text):
    with pytest.raises(ValueError):
        freshness.parse_sweep(text)


def test_the_command_prints_the_table_json_plot_and_sweep(tmp_path):
    proc = run_cli('schedule-sim', '--population', '2000', '--days', '60', '--budget', '80',
                   '--schedules', 'default,adaptive,uniform,proportional', '--plot',
                   str(tmp_path / 'lab.png'), '--sweep', 'inc_rate=0.2:0.4:0.2')
    lines = proc.stdout.splitlines()
    assert lines[0].startswith('2000 pages (mixed changes, seed 1, 50% with Last-Modified), '
                               '60 days')
    assert [line.split()[0] for line in lines[2:6]] == ['default', 'adaptive', 'uniform',
                                                        'proportional']
    assert 'sweep of the adaptive schedule, best first (by freshness)' in proc.stdout
    assert (tmp_path / 'lab.png').stat().st_size > 10000
    data = json.loads(run_cli('schedule-sim', '--population', '500', '--days', '30',
                              '--json').stdout)
    assert [r['name'] for r in data['results']] == ['default', 'adaptive']
    assert all(0 <= r['freshness'] <= 1 for r in data['results'])


@pytest.mark.parametrize('args', [['--population', '0'], ['--population', '10', '--budget', '-1'],
                                  ['--population', '10', '--sweep', 'nonsense=1:2:1']])
def test_the_command_refuses_bad_values(args):
    proc = run_cli('schedule-sim', *args, check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
