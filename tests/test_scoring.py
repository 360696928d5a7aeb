"""First-response allocation (docs/protocol.md#first-response-allocation) and order-preserving matching (docs/protocol.md#order-preserving-matching), by hand."""

from __future__ import annotations

import itertools
import random

import pytest

from interactscope.streaming.schema import Interaction, ResponseRecord, Target, ToolCall
from interactscope.streaming.scoring import (
    allocate_first_response,
    match_order_preserving,
    match_with_unjudged,
)
from interactscope.streaming.scoring.core import pairs_that_matter, score_interaction


def tgt(tid: str, tau: float | None = None, interval: tuple[float, float] | None = None, **kw):
    return Target(id=tid, time_s=tau, interval_s=interval, **kw)


def outcomes(allocs):
    return [a.outcome for a in allocs]


# --------------------------------------------------------------------------- docs/protocol.md#first-response-allocation


def test_spec_worked_example():
    """δ = 2, merge 2, q = 0, τ = 10 and 20; responses 6 (x), 7 (x), 11 (correct), 19 (correct)."""
    targets = [tgt("a", 10.0), tgt("b", 20.0)]
    times = [6.0, 7.0, 11.0, 19.0]
    correct = {(0, 2), (1, 3)}  # 11 conveys target a, 19 conveys target b
    allocs = allocate_first_response(
        targets, times, lambda k, j: (k, j) in correct, q=0.0, tolerance_s=2.0, merge_s=2.0
    )
    a, b = allocs
    assert a.region_s == (0.0, 15.0) and b.region_s == (15.0, float("inf"))
    assert a.group.times_s == (6.0, 7.0) and a.group.opened_s == 6.0
    assert a.outcome == "premature" and a.matched is None and not a.on_time
    assert b.group.times_s == (19.0,)
    assert b.outcome == "hit" and b.matched == 3 and b.on_time
    assert sum(x.hit for x in allocs) / len(allocs) == 0.5


def test_eligible_as_c_or_e_gives_same_result():
    targets = [tgt("a", 10.0), tgt("b", 20.0)]
    times = [6.0, 7.0, 11.0, 19.0]
    c = [[True, True, True, False], [False, False, False, True]]  # content only
    e = [[False, False, True, False], [False, False, False, True]]  # times window
    r1 = allocate_first_response(targets, times, c, q=0.0)
    r2 = allocate_first_response(targets, times, e, q=0.0)
    assert outcomes(r1) == outcomes(r2) == ["premature", "hit"]


def test_t1_premature_toolset_issue_case():
    """Targets {set_timer} at τ = 10; responses 7 and 11 both calling set_timer -> premature; the
    7 s group is consumed and the 11 s one counts for nothing."""
    inter = Interaction(
        id="i1",
        video_id="v",
        task="T1",
        query={"time_s": 0.0, "text": "set a timer when the pasta goes in"},
        targets=[tgt("k1", 10.0, tools=["set_timer"])],
    )
    call = [ToolCall(name="set_timer", arguments={"seconds": 30})]
    recs = [
        ResponseRecord(interaction_id="i1", t=float(t), silent=True, text="<SILENT>")
        for t in range(0, 7)
    ]
    recs.append(ResponseRecord(interaction_id="i1", t=7.0, silent=False, tool_calls=call))
    recs += [ResponseRecord(interaction_id="i1", t=float(t), silent=True) for t in (8, 9, 10)]
    recs.append(ResponseRecord(interaction_id="i1", t=11.0, silent=False, tool_calls=call))

    def no_judge(target_id, t_ms):  # T1 uses the tool-set check, never a text judge
        raise AssertionError("text judge called for a T1 target")

    assert pairs_that_matter(inter, recs) == []  # 7 s is outside [8, 12]: nothing to judge
    s = score_interaction(inter, recs, no_judge, cluster="c")
    (row,) = s.targets
    assert row["outcome"] == "premature"
    assert row["group_open_s"] == 7.0 and row["group_size"] == 1
    assert row["response_t"] == 7.0 and row["on_time"] == 0 and row["hit"] == 0
    assert s.interaction["responses"] == 2 and s.interaction["probed_s"] == 11.0


@pytest.mark.parametrize(
    "times, verdicts, expected",
    [
        ([9.0], {0: True}, "hit"),
        ([9.0], {0: False}, "wrong"),
        ([5.0], {}, "premature"),
        ([13.0], {}, "late"),
        ([], {}, "missed"),
        ([9.0], {0: None}, "unjudged"),
        ([9.0, 10.0], {0: None, 1: True}, "hit"),  # the unparseable member cannot matter
        ([9.0, 10.0], {0: False, 1: False}, "wrong"),
        ([7.0, 8.5], {1: True}, "hit"),  # group opens before the window, a member is inside
        ([12.0], {0: True}, "hit"),  # closed window: τ + δ itself counts
        ([12.001], {0: True}, "late"),
        ([7.999], {0: True}, "premature"),
        ([8.0], {0: True}, "hit"),
    ],
)
def test_every_outcome_single_target(times, verdicts, expected):
    """One target τ = 10 (window [8, 12], region [0, ∞)), q = 0."""
    allocs = allocate_first_response(
        [tgt("a", 10.0)], times, lambda k, j: verdicts.get(j, False), q=0.0
    )
    assert outcomes(allocs) == [expected]


def test_responses_before_q_silent_error_suppressed_are_ignored():
    recs = [
        ResponseRecord(interaction_id="i", t=3.0, silent=False, text="early"),  # before q
        ResponseRecord(interaction_id="i", t=6.0, silent=False, text="x", error="HTTP 500"),
        ResponseRecord(interaction_id="i", t=7.0, silent=False, text="x", suppressed=True),
        ResponseRecord(interaction_id="i", t=7.5, silent=True, text="<SILENT>"),
        ResponseRecord(interaction_id="i", t=9.0, silent=False, text="right"),
    ]
    allocs = allocate_first_response([tgt("a", 10.0)], recs, lambda k, j: j == 4, q=5.0)
    assert outcomes(allocs) == ["hit"]
    assert allocs[0].group.members == (4,)


def test_merge_boundary_and_region_boundary():
    targets = [tgt("a", 10.0), tgt("b", 20.0)]
    # 6 and 8 merge (8 <= 6 + 2); 8.001 would open a new group.
    same = allocate_first_response(targets, [6.0, 8.0], lambda k, j: j == 1, q=0.0)
    assert same[0].group.times_s == (6.0, 8.0) and same[0].outcome == "hit"
    split = allocate_first_response(targets, [6.0, 8.001], lambda k, j: j == 1, q=0.0)
    assert split[0].group.times_s == (6.0,) and split[0].outcome == "premature"
    # A group opening exactly at b_1 = 15 belongs to target b (regions are [b_{k-1}, b_k)).
    at_b = allocate_first_response(targets, [15.0], lambda k, j: True, q=0.0)
    assert outcomes(at_b) == ["missed", "premature"]
    just_before = allocate_first_response(targets, [14.999], lambda k, j: True, q=0.0)
    assert outcomes(just_before) == ["late", "missed"]


def test_later_groups_in_region_count_for_nothing_and_late_then_missed():
    targets = [tgt("a", 10.0), tgt("b", 20.0)]
    # 13 (late for a) consumes a; 14.5 is a later group in a's region; b gets nothing.
    allocs = allocate_first_response(targets, [13.0, 14.5], lambda k, j: True, q=0.0)
    assert outcomes(allocs) == ["late", "missed"]


def test_straddling_group_is_premature():
    """δ = 0.5 (window [9.5, 10.5]) with merge 2: a group {9, 11} has no member inside."""
    allocs = allocate_first_response(
        [tgt("a", 10.0)], [9.0, 11.0], lambda k, j: True, q=0.0, tolerance_s=0.5, merge_s=2.0
    )
    assert outcomes(allocs) == ["premature"]


def test_times_rounded_to_ms():
    allocs = allocate_first_response([tgt("a", 10.0)], [12.0004], lambda k, j: True, q=0.0)
    assert outcomes(allocs) == ["hit"]
    allocs = allocate_first_response([tgt("a", 10.0)], [12.0006], lambda k, j: True, q=0.0)
    assert outcomes(allocs) == ["late"]


def test_interval_target_uses_midpoint_region_and_interval_window():
    targets = [tgt("a", interval=(2.0, 4.0)), tgt("b", 10.0)]  # anchor 3, b_1 = 6.5
    allocs = allocate_first_response(targets, [4.5, 6.6], lambda k, j: True, q=0.0)
    assert allocs[0].window_s == (2.0, 4.0) and allocs[0].region_s == (0.0, 6.5)
    assert outcomes(allocs) == ["late", "premature"]


def test_targets_given_out_of_order_are_allocated_by_time():
    targets = [tgt("b", 20.0), tgt("a", 10.0)]
    allocs = allocate_first_response(targets, [10.0, 20.0], lambda k, j: True, q=0.0)
    assert [a.target_index for a in allocs] == [0, 1]
    assert [a.matched for a in allocs] == [1, 0]


# --------------------------------------------------------------------------- docs/protocol.md#order-preserving-matching


def _greedy_nearest(targets_tau, times, e):
    """Each target in turn takes its nearest eligible unused response (the naive pairing)."""
    used, n = set(), 0
    for k, tau in enumerate(targets_tau):
        cands = [j for j in range(len(times)) if e[k][j] and j not in used]
        if cands:
            used.add(min(cands, key=lambda j: abs(times[j] - tau)))
            n += 1
    return n


def test_t8_matching_beats_greedy_nearest():
    """τ = 10 and 13 (windows [8, 12], [11, 15]); responses 8 (conveys step 1) and 11 (conveys
    both). Nearest pairing gives step 1 the response at 11 (1 s away) and step 2 nothing;
    the maximum matching pairs 8 -> step 1 and 11 -> step 2."""
    times = [8.0, 11.0]
    e = [[1, 1], [0, 1]]
    assert _greedy_nearest([10.0, 13.0], times, e) == 1
    res = match_order_preserving(e)
    assert res.count == 2
    assert res.pairs == [(0, 0), (1, 1)]


def test_t8_matching_preserves_order():
    # Step 2 conveyed first, step 1 later: only one of them can be matched.
    res = match_order_preserving([[0, 1], [1, 0]])
    assert res.count == 1 and len(res.pairs) == 1


def test_t8_matching_one_response_serves_one_target():
    res = match_order_preserving([[1], [1], [1]])
    assert res.count == 1 and res.pairs == [(0, 0)]


@pytest.mark.parametrize("matrix, count", [([], 0), ([[], []], 0), ([[0, 0], [0, 0]], 0)])
def test_t8_matching_empty(matrix, count):
    assert match_order_preserving(matrix).count == count


def test_t8_matching_equals_brute_force():
    rng = random.Random(7)
    for _ in range(200):
        k, m = rng.randint(1, 4), rng.randint(1, 5)
        e = [[rng.random() < 0.4 for _ in range(m)] for _ in range(k)]
        best = 0
        for size in range(min(k, m), 0, -1):
            for ks in itertools.combinations(range(k), size):
                for js in itertools.combinations(range(m), size):
                    if all(e[a][b] for a, b in zip(ks, js, strict=True)):
                        best = size
                        break
                if best:
                    break
            if best:
                break
        res = match_order_preserving(e)
        assert res.count == best
        assert len(res.pairs) == best
        assert all(e[a][b] for a, b in res.pairs)
        assert all(a1 < a2 and b1 < b2 for (a1, b1), (a2, b2) in itertools.pairwise(res.pairs))


def test_match_with_unjudged():
    # The None cannot change the maximum: kept, nothing excluded.
    r = match_with_unjudged([[True, None]])
    assert r.count == 1 and r.excluded == []
    # The None decides target 0: excluded from numerator and denominator.
    r = match_with_unjudged([[None, False], [False, True]])
    assert r.excluded == [0] and r.count == 1 and r.pairs == [(1, 1)]


def test_t8c_complete_and_interval_windows_through_core():
    inter = Interaction(
        id="g",
        video_id="v",
        task="T8-C",
        query={"time_s": 0.0, "text": "guide me"},
        targets=[tgt("s1", 5.0, reference="step one"), tgt("s2", 10.0, reference="step two")],
    )
    recs = [
        ResponseRecord(interaction_id="g", t=4.0, silent=False, text="step one"),
        ResponseRecord(interaction_id="g", t=9.0, silent=False, text="step two"),
        ResponseRecord(interaction_id="g", t=20.0, silent=False, text="step two again"),
    ]
    assert pairs_that_matter(inter, recs) == [(0, 0), (1, 1)]  # 20 s is in no window

    def verdict(target_id, t_ms):
        ok = (target_id, t_ms) in {("s1", 4000), ("s2", 9000)}
        return ok, "yes" if ok else "no"

    s = score_interaction(inter, recs, verdict, cluster="c")
    assert [r["outcome"] for r in s.targets] == ["hit", "hit"]
    assert [r["response_t"] for r in s.targets] == [4.0, 9.0]
    assert s.interaction["complete"] == 1
    s2 = score_interaction(inter, recs[:1], verdict, cluster="c")
    assert [r["outcome"] for r in s2.targets] == ["hit", "missed"]
    assert s2.interaction["complete"] == 0


def test_allocation_invariants_random():
    """Random interactions: each group is consumed by at most one target, a hit's matched
    response is inside its window and in its consumed group, and outcomes follow the times."""
    rng = random.Random(3)
    for _ in range(300):
        q = rng.choice([0.0, 2.5])
        taus = sorted(rng.uniform(q, 60) for _ in range(rng.randint(1, 4)))
        targets = [tgt(f"k{i}", round(x, 3)) for i, x in enumerate(taus)]
        times = sorted(round(rng.uniform(0, 65), 3) for _ in range(rng.randint(0, 12)))
        ok = {(k, j): rng.random() < 0.5 for k in range(len(targets)) for j in range(len(times))}
        allocs = allocate_first_response(targets, times, lambda k, j, ok=ok: ok[(k, j)], q=q)
        consumed = [a.group.opened_s for a in allocs if a.group is not None]
        assert len(consumed) == len(set(consumed))
        for a in allocs:
            lo, hi = a.window_s
            if a.outcome == "missed":
                assert a.group is None
                continue
            ts = a.group.times_s
            assert a.region_s[0] <= a.group.opened_s < a.region_s[1]
            if a.outcome == "hit":
                assert a.matched in a.group.members and lo <= times[a.matched] <= hi
                assert ok[(a.target_index, a.matched)]
            elif a.outcome == "late":
                assert all(t > hi for t in ts)
            elif a.outcome == "premature":
                assert not any(lo <= t <= hi for t in ts) and ts[0] < lo
            else:
                assert a.outcome == "wrong" and any(lo <= t <= hi for t in ts)
