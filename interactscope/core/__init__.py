"""Records, settings base, errors and package resources both benchmarks use."""
