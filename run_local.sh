#!/usr/bin/env bash
# beamcrawl on this machine.
#
#   ./run_local.sh                      venv + install, then a demo crawl, then `readdb --stats`
#   ./run_local.sh SEEDS_FILE [ROUNDS]  crawl real seeds (needs network and http.agent.name)
#   ./run_local.sh --test               venv + install with test extras, then the whole test suite
#
# The venv lives in .venv (override with BEAMCRAWL_VENV). Pass extra pytest arguments after --test.
set -euo pipefail
cd "$(dirname "$0")"
venv="${BEAMCRAWL_VENV:-.venv}"
python="${PYTHON:-python3}"

step() { printf '\n== %s\n' "$*" >&2; }

setup_venv() {  # $1: pip extras, e.g. "[test]"
  if [ ! -x "$venv/bin/python" ]; then
    step "creating $venv"
    "$python" -m venv "$venv"
  fi
  step "installing beamcrawl$1 into $venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet -e ".$1"
}

if [ "${1:-}" = "--test" ]; then
  shift
  setup_venv "[test]"
  step "running the test suite"
  exec "$venv/bin/python" -m pytest -q "$@"
fi

setup_venv ""
bc="$venv/bin/beamcrawl"

if [ $# -ge 1 ]; then
  seeds="$1"; rounds="${2:-3}"
  crawl_dir="${CRAWL_DIR:-crawl}"
  step "inject $seeds into $crawl_dir (the crawl loop arrives with fetch; rounds=$rounds not run yet)"
  "$bc" inject "$crawl_dir" "$seeds"
  "$bc" readdb "$crawl_dir" --stats
  exit 0
fi

crawl_dir="${CRAWL_DIR:-demo-crawl}"
seeds_dir="$crawl_dir/seeds"
mkdir -p "$seeds_dir"
cat > "$seeds_dir/seeds.txt" <<'SEEDS'
# demo seeds: URL, then optional TAB-separated key=value metadata
http://www.demo.test/
http://blog.demo.test/	score=2.0	topic=news
http://shop.demo.test/catalog?page=1	fetch_interval=86400
HTTP://WWW.DEMO.TEST:80/about/../	comment=duplicate of the first seed after normalization
http://www.demo.test/logo.png
SEEDS
step "demo: inject (fetch, parse, updatedb and the 3-round crawl loop are not built yet)"
"$bc" inject "$crawl_dir" "$seeds_dir" -D domain.extra.suffixes=test
step "demo: readdb --stats"
"$bc" readdb "$crawl_dir" --stats
