"""Capacity planning: ``sweep`` (a grid of scenarios over seeds), ``executors`` (a local
process pool or a Dask cluster), ``sweep_report`` (intervals, the cheapest point, plots),
``queueing`` (the world as an M/M/c queue and its closed forms) and ``compare`` (one scenario
on every queue preset)."""
