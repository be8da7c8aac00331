#!/usr/bin/env bash
# beamcrawl on this machine.
#
#   ./run_local.sh                      venv + install, then a demo crawl, then `readdb --stats`
#   ./run_local.sh SEEDS_FILE [ROUNDS]  crawl real seeds (needs network and http.agent.name)
#   ./run_local.sh --test               venv + install with test extras, then the whole test suite
#   ./run_local.sh --flink start|stop|status|demo
#                                       a local Flink 1.19 cluster (cached in .flink/): `start`
#                                       prints the Beam options to add to any beamcrawl command;
#                                       `start --taskmanagers N [--isolate]`: N TaskManagers,
#                                       each with a private /tmp and working directory
#   ./run_local.sh --hdfs start|stop|status
#                                       a local HDFS (built and kept in .hdfs/): `start` prints
#                                       the Beam options that reach it (paths hdfs://PATH)
#   ./run_local.sh --s3 start|stop|status
#                                       a local S3-compatible store, SeaweedFS (built once per
#                                       user; data in .s3/): `start` prints the Beam options
#
# The venv lives in .venv (override with BEAMCRAWL_VENV). Pass extra pytest arguments after --test.
set -euo pipefail
cd "$(dirname "$0")"
venv="${BEAMCRAWL_VENV:-.venv}"
python="${PYTHON:-python3}"

step() { printf '\n== %s\n' "$*" >&2; }

setup_venv() {  # $1: pip extras, e.g. "[test]"
  # setup.py's python_requires: Python 3.10 reached its end of life in October 2026.
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "run_local.sh: beamcrawl needs Python 3.11 or newer; $python is" \
         "$("$python" --version 2>&1 || echo missing): set PYTHON=python3.11 (or newer)" >&2
    exit 2
  fi
  if [ ! -x "$venv/bin/python" ]; then
    step "creating $venv"
    "$python" -m venv "$venv"
  fi
  step "installing beamcrawl$1 into $venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet -e ".$1"
  # An editable install leaves beamcrawl's own modules uncompiled; compiled once here, every
  # command starts without compiling them (also where PYTHONDONTWRITEBYTECODE is set)
  "$venv/bin/python" -m compileall -q -j 0 pipelines transforms >/dev/null
}

if [ "${1:-}" = "--test" ]; then
  shift
  setup_venv "[test]"
  step "running the test suite"
  # Three workers: the Flink tests (one group, one cluster) on one, the rest beside them.
  exec "$venv/bin/python" -m pytest -q -n "${BEAMCRAWL_TEST_WORKERS:-3}" --dist loadgroup "$@"
fi

setup_venv ""
bc="$venv/bin/beamcrawl"

if [ "${1:-}" = "--flink" ]; then
  shift
  [ $# -ge 1 ] || { echo "usage: ./run_local.sh --flink start|stop|status|demo" >&2; exit 2; }
  exec "$bc" flink "$@"    # the home: BEAMCRAWL_FLINK_HOME, the last start's, or ./.flink
fi

if [ "${1:-}" = "--hdfs" ]; then
  shift
  [ $# -ge 1 ] || { echo "usage: ./run_local.sh --hdfs start|stop|status" >&2; exit 2; }
  exec "$bc" hdfs "$@"     # the home: BEAMCRAWL_HDFS_HOME, the last start's, or ./.hdfs
fi

if [ "${1:-}" = "--s3" ]; then
  shift
  [ $# -ge 1 ] || { echo "usage: ./run_local.sh --s3 start|stop|status" >&2; exit 2; }
  exec "$bc" s3 "$@"       # the home: BEAMCRAWL_S3_HOME, the last start's, or ./.s3
fi

if [ $# -ge 1 ]; then
  seeds="$1"; rounds="${2:-3}"
  crawl_dir="${CRAWL_DIR:-crawl}"
  conf=()
  [ -n "${BEAMCRAWL_CONF:-}" ] && conf=(--conf "$BEAMCRAWL_CONF")
  [ -n "${HTTP_AGENT_NAME:-}" ] && conf+=(-D "http.agent.name=$HTTP_AGENT_NAME")
  if [ ${#conf[@]} -eq 0 ]; then
    echo "run_local.sh: name your crawler first: HTTP_AGENT_NAME=mybot ./run_local.sh $*" >&2
    echo "  (or BEAMCRAWL_CONF=site.yaml with http.agent.name in it)" >&2
    exit 2
  fi
  step "crawl $seeds for $rounds rounds into $crawl_dir"
  "$bc" crawl "$crawl_dir" --seeds "$seeds" --rounds "$rounds" "${conf[@]}"
  step "readdb --stats"
  "$bc" readdb "$crawl_dir" --stats "${conf[@]}"
  exit 0
fi

crawl_dir="${CRAWL_DIR:-demo-crawl}"
if [ -e "$crawl_dir" ]; then
  step "removing the previous demo crawl $crawl_dir"
  rm -rf "$crawl_dir"
fi
step "demo: 3 rounds against the bundled demo web (served on loopback by beamcrawl itself)"
"$bc" demo "$crawl_dir" --rounds 3
