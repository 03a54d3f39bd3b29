"""The order in which waiting runs get a cluster: round-robin between teams, first come
first served within a team. Pure; ``runs.queue`` feeds it from the database.

Round-robin has a memory: the team whose run was dispatched most recently goes last in
each round, a team never served (or served longest ago) first. Without it a team with many
waiting runs would get every other slot forever after the others' runs started.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Waiting:
    """A queued run as the order sees it: its team, when it joined the queue, and when the
    queue last dispatched a run of its team (None: never)."""

    run_id: int
    team_id: int
    queued_at: datetime
    team_served_at: datetime | None = None


def fair_order(waiting: Iterable[Waiting]) -> list[Waiting]:
    """``waiting`` in dispatch order: round r takes the r-th run (by ``queued_at``, then
    id) of every team that has one, teams ordered by when they were last served (never
    first, then oldest), ties by their oldest waiting run, then team id."""
    lines: dict[int, list[Waiting]] = defaultdict(list)
    for w in sorted(waiting, key=lambda w: (w.queued_at, w.run_id)):
        lines[w.team_id].append(w)

    def team_key(team_id: int):
        head = lines[team_id][0]
        served = head.team_served_at
        return (served is not None, served or head.queued_at, head.queued_at, team_id)

    teams = sorted(lines, key=team_key)
    rounds = max((len(line) for line in lines.values()), default=0)
    return [lines[t][r] for r in range(rounds) for t in teams if r < len(lines[t])]
