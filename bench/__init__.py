"""kemu's benchmarks (the scheduler-perf analogue): `python -m bench` lists them."""
