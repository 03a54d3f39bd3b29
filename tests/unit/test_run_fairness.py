"""The queue's order (runs.fairness): round-robin between teams, FIFO within a team, the
team served most recently last."""
from datetime import datetime, timedelta

from runs.fairness import Waiting, fair_order

T0 = datetime(2026, 1, 1)


def at(s: int) -> datetime:
    return T0 + timedelta(seconds=s)


def ids(order) -> list[int]:
    return [w.run_id for w in order]


def test_round_robin_between_teams_fifo_within_a_team():
    a1, a2, a3 = Waiting(1, team_id=10, queued_at=at(0)), Waiting(2, 10, at(1)), Waiting(3, 10, at(2))
    b1, b2 = Waiting(4, 20, at(3)), Waiting(5, 20, at(4))
    assert ids(fair_order([b2, a3, b1, a1, a2])) == [1, 4, 2, 5, 3]


def test_the_team_served_last_goes_last():
    # Team 10 just had a run dispatched: team 20's run goes first although it came later.
    a2 = Waiting(2, 10, at(1), team_served_at=at(5))
    b1 = Waiting(4, 20, at(3), team_served_at=None)
    c1 = Waiting(6, 30, at(0), team_served_at=at(2))
    assert ids(fair_order([a2, b1, c1])) == [4, 6, 2]


def test_same_instant_by_id_and_empty():
    assert ids(fair_order([Waiting(9, 1, at(0)), Waiting(3, 1, at(0))])) == [3, 9]
    assert fair_order([]) == []
