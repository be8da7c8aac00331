"""`python -m beamcrawl.transforms.workerpool PORT`: the Beam worker pool that a TaskManager host
of your own Flink cluster runs (README, "Running on Flink"). The pool itself is
transforms/runners/workerpool.py; this entry point keeps the documented command working."""

from beamcrawl.transforms.runners.workerpool import main

if __name__ == '__main__':
    main()
