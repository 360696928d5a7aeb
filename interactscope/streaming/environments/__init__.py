"""Streamed T1 tool calls executed on EgoBench environments: the one place the two benchmarks meet."""
