"""Decision-point counts of the bundled demo benchmark, by hand."""

from __future__ import annotations

DEMO_POINTS = {
    "t1-taxi": 11,  # 0..10
    "t1-cyclist": 9,  # 2..10
    "t1-speech": 9,  # 0..7, 7.6
    "t2-cut": 9,
    "t2-bunny": 7,  # 0..5, 5.312
    "t3-pedestrian": 6,  # 5..10
    "t3-startled": 6,  # 0..4, 4.004
    "t7-walkers": 10,  # 1..10
    "t8a-obstacles": 11,
    "t8b-said": 4,  # 5, 6, 7, 7.6
    "t1-home-chores": 7,  # bunny, q = 0: 0..5, 5.312 (the environment interaction)
}
