"""Decision grid (docs/protocol.md#decision-grid): {q, D} ∪ {k ∈ ℤ : q ≤ k ≤ D}."""

import pytest

from interactscope.streaming.protocol import decision_grid


def test_issue_example_q_3_4_d_7():
    assert decision_grid(3.4, 7.0) == [3.4, 4.0, 5.0, 6.0, 7.0]


def test_integer_q_and_fractional_end():
    # q itself is an integer second: it appears once; D = 7.6 is appended after 7.
    assert decision_grid(0.0, 7.6) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.6]


def test_sparse_step_keeps_q_and_end():
    # step 2: multiples of 2 within [2.5, 9.3] are 4, 6, 8
    assert decision_grid(2.5, 9.3, step=2.0) == [2.5, 4.0, 6.0, 8.0, 9.3]


def test_query_at_end_gives_single_point():
    assert decision_grid(5.0, 5.0) == [5.0]


def test_times_are_rounded_to_milliseconds():
    assert decision_grid(0.1 + 0.2, 2.0) == [0.3, 1.0, 2.0]


@pytest.mark.parametrize("q,d,step", [(-1.0, 5.0, 1.0), (6.0, 5.0, 1.0), (0.0, 5.0, 0.0)])
def test_invalid_arguments(q, d, step):
    with pytest.raises(ValueError):
        decision_grid(q, d, step)
