"""The dashboard side of ``manage.py bench_live``: many WebSocket clients in one asyncio
process (``python -m benchmarks.live_clients``), kept apart from the ingestion driver so
neither's CPU time shows up as the other's delay.

It talks to the command over its stdin/stdout, one JSON object per line:

1. reads the spec ``{"clients": [{"url", "cookie", "origin", "run"}], "names": [...],
   "points_per_run": N}``, opens every socket, prints ``{"ready": connected, "errors": [...]}``;
2. counts every metric point each client receives, in a byte per point slot
   (slot = ``step * len(names) + name index``, so a batch ``seq`` of ``batch`` points fills
   slots ``[(seq - 1) * batch, seq * batch)``; counts saturate at 255);
3. reads ``{"accepted": {run: [seq, ...]}, "batch": B, "drain_s": S}``, waits until every
   client holds every accepted point (or ``S`` seconds pass), closes the sockets and prints
   ``{"clients": [{"run", "expected", "received", "unique", "unexpected", "closed"}],
   "delays_s": [...], "delay_points": [...], "cpu_s": s}``: one delay (receive wall time minus the
   send wall time the driver put in each point's ``value``) and its point count per message,
   and the CPU seconds this process used after the sockets opened.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed


class Counter:
    """What one client received: per-slot counts, totals, and per-message delays."""

    def __init__(self, run: int, slots: int, names: dict[str, int]):
        self.run, self.names, self.width = run, names, len(names)
        self.counts = bytearray(slots)
        self.received = self.unique = self.unexpected = 0
        self.delays: list[float] = []
        self.sizes: list[int] = []
        self.closed: int | None = None  # close code if the server closed the socket

    def take(self, raw: str | bytes, now: float) -> None:
        """Count the points of one pushed message received at wall time ``now``."""
        msg = json.loads(raw)
        if msg.get("type") != "metrics":
            return
        points = msg["points"]
        counts, names, width = self.counts, self.names, self.width
        for p in points:
            self.received += 1
            slot = p["step"] * width + names.get(p["name"], -10**9)
            if not 0 <= slot < len(counts):
                self.unexpected += 1
                continue
            c = counts[slot]
            if c == 0:
                self.unique += 1
            if c < 255:
                counts[slot] = c + 1
        if points:
            self.delays.append(now - points[0]["value"])  # all points of a batch carry one send time
            self.sizes.append(len(points))

    def report(self, accepted: list[int], batch: int) -> dict:
        """Counts against the accepted batches: ``unique`` counts only accepted slots."""
        held = sum(batch - self.counts[(s - 1) * batch:s * batch].count(0) for s in accepted)
        outside = self.unique - held  # slots filled that belong to no accepted batch
        return {"run": self.run, "expected": len(accepted) * batch, "received": self.received,
                "unique": held, "unexpected": self.unexpected + outside, "closed": self.closed}


async def _listen(ws, counter: Counter) -> None:
    try:
        async for raw in ws:
            counter.take(raw, time.time())
    except ConnectionClosed:
        pass
    if ws.close_code not in (None, 1000):
        counter.closed = ws.close_code


async def _line(reader: asyncio.StreamReader) -> dict:
    line = await reader.readline()
    if not line:
        raise SystemExit("live_clients: the command closed stdin")
    return json.loads(line)


async def main() -> None:
    """Run one benchmark's clients as described in the module docstring."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    spec = await _line(reader)
    names = {n: i for i, n in enumerate(spec["names"])}
    counters, sockets, errors = [], [], []
    for c in spec["clients"]:
        try:
            ws = await connect(c["url"], origin=c["origin"], additional_headers={"Cookie": c["cookie"]},
                               max_size=2**24, compression=None, open_timeout=30)
        except Exception as exc:  # reported to the command, which refuses to go on
            errors.append(f"{c['url']}: {exc!r}")
            continue
        counters.append(Counter(c["run"], spec["points_per_run"], names))
        sockets.append(ws)
    tasks = [asyncio.create_task(_listen(ws, ctr)) for ws, ctr in zip(sockets, counters)]
    print(json.dumps({"ready": len(sockets), "errors": errors}), flush=True)
    cpu0 = time.process_time()

    end = await _line(reader)
    accepted = {int(k): v for k, v in end["accepted"].items()}
    batch = end["batch"]
    deadline = time.monotonic() + end["drain_s"]
    while time.monotonic() < deadline:
        if all(c.unique >= len(accepted.get(c.run, [])) * batch or c.closed for c in counters):
            break
        await asyncio.sleep(0.05)
    for ws in sockets:
        await ws.close()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps({"clients": [c.report(accepted.get(c.run, []), batch) for c in counters],
                      "delays_s": [d for c in counters for d in c.delays],
                      "delay_points": [n for c in counters for n in c.sizes],
                      "cpu_s": time.process_time() - cpu0}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
