"""Helpers shared by test modules (synthetic benchmarks, media, runs, stub HTTP servers, tiny
random-weight models). Test modules import from here, never from each other."""
