"""The append-only run folder both benchmarks write."""
