"""The hub's start queue: at most N starts at once, first come first served, positions shown."""

from __future__ import annotations

import asyncio
import sys

import pytest
from spawner.platform_standin import profile, vc

from yitong_spawner.spawner import YitongSpawner
from yitong_spawner.start_queue import StartQueue, default_limit, describe


async def test_fifo_with_positions():
    q = StartQueue(2)
    order: list[str] = []

    async def start(name: str) -> None:
        await q.acquire(name)
        order.append(name)

    await q.acquire("a")
    await q.acquire("b")
    waiting = [asyncio.ensure_future(start(n)) for n in ("c", "d", "e")]
    await asyncio.sleep(0)
    assert [q.position(n).ahead for n in ("c", "d", "e")] == [0, 1, 2]
    assert q.position("a") is None and q.holds("a")
    assert describe(q.position("d")) == "Waiting to start: 1 ahead of you; 2 of 2 starting at a time on this hub"
    q.release("a")
    q.release("a")  # idempotent: frees one slot, not two
    await asyncio.sleep(0)
    assert order == ["c"] and q.position("d").ahead == 0
    q.release("b")
    q.release("c")
    await asyncio.gather(*waiting[1:])
    assert order == ["c", "d", "e"]


async def test_a_cancelled_wait_leaves_no_trace():
    q = StartQueue(1)
    await q.acquire("a")
    gone = asyncio.ensure_future(q.acquire("b"))
    stays = asyncio.ensure_future(q.acquire("c"))
    await asyncio.sleep(0)
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert q.position("b") is None and q.position("c").ahead == 0
    q.release("a")
    await stays
    assert q.holds("c") and not q.holds("b")


async def test_a_slot_granted_to_a_cancelled_waiter_passes_on():
    q = StartQueue(1)
    await q.acquire("a")
    late = asyncio.ensure_future(q.acquire("b"))
    nxt = asyncio.ensure_future(q.acquire("c"))
    await asyncio.sleep(0)
    q.release("a")  # b is granted the slot...
    late.cancel()  # ...but its spawn is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await late
    await asyncio.wait_for(nxt, 1)
    assert q.holds("c") and not q.holds("b")


def test_limits():
    with pytest.raises(ValueError, match="at least 1"):
        StartQueue(0)
    assert default_limit("local", cpus=2) == 16
    assert default_limit("local", cpus=0) == 8
    assert default_limit("slurm") == default_limit("kubernetes") == 32


@pytest.fixture
def vision(platform):
    platform.spawn_options["alice"] = [vc("vision", [profile("cpu-small")])]
    platform.spawn_options["bob"] = [vc("vision", [profile("cpu-small")])]


async def test_spawners_reserve_first_then_queue_then_free_the_slot(make_spawner, platform, vision):
    """Refusals do not wait: the allocation is taken before the queue. The second spawner waits
    for the first's slot, which frees when its server stops (here: start fails, then stop)."""
    cmd = {"YitongSpawner": {"cmd": [sys.executable, "-c", "import time; time.sleep(30)"]}}
    from traitlets.config import Config

    first = make_spawner("alice", config=Config(cmd), start_concurrency=1, user_options={"vc": "vision"})
    second = make_spawner("bob", config=Config(cmd), start_concurrency=1, user_options={"vc": "vision"})
    queue = first.start_queue()
    assert queue is second.start_queue() and queue.limit == 1
    await first.run_pre_spawn_hook()
    assert queue.holds(first) and len(platform.allocations) == 1
    waiting = asyncio.ensure_future(second.run_pre_spawn_hook())
    for _ in range(200):  # bob's resources are reserved first, then he waits for the slot
        if len(platform.allocations) == 2:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)
    assert not waiting.done() and len(platform.allocations) == 2
    second._spawn_pending = True
    events = second.progress()
    assert (await events.__anext__())["message"].startswith("Waiting to start: you are next")
    await first.stop()
    await asyncio.wait_for(waiting, 5)
    assert queue.holds(second) and not queue.holds(first)
    await second.stop()
    assert not queue.holds(second) and not platform.allocations
    await events.aclose()


async def test_a_refused_spawn_never_queues(make_spawner, platform, vision):
    spawner = make_spawner("alice", start_concurrency=1, user_options={"vc": "vision", "profile": "nope"})
    with pytest.raises(Exception, match="nope"):
        await spawner.run_pre_spawn_hook()
    assert not spawner.start_queue().holds(spawner) and spawner.start_queue().position(spawner) is None
    assert isinstance(spawner, YitongSpawner)
