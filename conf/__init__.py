# conf/ is installed as the package `beamcrawl_conf` so that an installed beamcrawl finds its
# defaults and rule files (see setup.py and transforms/base/config.py: bundled_conf_dir).
