"""Test and demo support, not used by any crawl stage: a multi-host web served on loopback
(`web`) and the demo site of `beamcrawl demo` (`demosite`). It is installed with the package
because `beamcrawl demo` (and ./run_local.sh) serve the demo web from an installed beamcrawl."""
