"""Node identity: runs are leased under a stable node name, so a restarted node takes its own
in-flight runs back at once, while other nodes' runs wait for their leases (runtime.scheduler.node).

A "crash" here is a runtime stopped with no drain (``drain_seconds = 0``) that does not hand its
runs back (``hand_back_on_stop``): its in-flight run stays ``running`` under its lease, as after a
SIGKILL. The clock never moves unless a test says so.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import PG_URL, Boot, Team, reset_postgres
from live_server import free_port, held_node_names, wait_until
from openbot.config import Settings
from openbot.core.clock import FakeClock
from openbot.runtime.engine import Runtime
from openbot.runtime.runner.prepare import Prepared
from openbot.runtime.runs.claim import Claim
from openbot.runtime.scheduler import node
from openbot.runtime.team import get_actor

QUICK = [{"match": ".", "reply": "built it"}]
on_postgres = pytest.mark.skipif(not PG_URL, reason="node names are held on PostgreSQL")


def test_the_default_name_is_stable_and_differs_per_data_dir(tmp_path: Path) -> None:
    first = Settings(data_dir=tmp_path / "a")
    name = node.default_name(first)
    assert name == node.default_name(Settings(data_dir=tmp_path / "a"))  # stable across restarts
    assert name != node.default_name(Settings(data_dir=tmp_path / "b"))
    assert node.configured_name(first) == name
    assert node.configured_name(Settings(data_dir=tmp_path / "a", node_id="eu-1")) == "eu-1"
    assert node.candidates(first)[:3] == [name, f"{name}-2", f"{name}-3"]
    assert node.candidates(Settings(data_dir=tmp_path / "a", node_id="eu-1")) == ["eu-1"]
    assert node.worker_name("eu-1", 2) == "eu-1-w2"


@pytest.mark.parametrize("bad", ["", "has space", "a/b", "x" * 65])
def test_a_bad_node_id_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="node_id"):
        Settings(data_dir=tmp_path, node_id=bad)


async def test_runs_are_leased_under_the_node_name(boot: Boot, settings: Settings) -> None:
    settings.node_id = "node-a"
    async with boot() as rt:
        team = Team(rt)
        rt.system.pause()
        await team.post(await team.thread(), "@engineer build")
        async with rt.db.read() as s:
            engineer = await get_actor(s, "engineer")
        claim = await rt.system.claim(engineer.id)
        assert claim is not None
        (run,) = await team.runs()
        assert rt.system.owner == "node-a"
        assert run.lease_owner == "node-a"


async def _crash_mid_run(boot: Boot, settings: Settings) -> dict[str, str]:
    """Leave @engineer's run in flight under node-a's lease, as if node-a had been killed."""
    settings.node_id = "node-a"
    settings.drain_seconds = 0
    async with boot() as rt:
        rt.hand_back_on_stop = False  # as if killed
        team = Team(rt)
        await team.script("engineer", QUICK, delay_ms=60_000)
        started = asyncio.Event()

        async def model_starts(_claim: Claim, _prepared: Prepared) -> None:
            started.set()

        team.on_prepared(model_starts)
        thread = await team.thread()
        posted = await team.post(thread, "@engineer build")
        async with asyncio.timeout(10):
            await started.wait()
        await team.script("engineer", QUICK)  # the run after the restart is quick
        (run,) = await team.runs(thread)
    return {"thread": thread, "message": posted.message.id, "run": run.id}


def _notices(messages: list[dict[str, Any]]) -> list[str]:
    return [m["metadata"]["run_id"] for m in messages if m["metadata"].get("kind") == "run_failed"]


@on_postgres
@pytest.mark.parametrize("backend", ["postgresql"], indirect=False)
async def test_a_restarted_node_takes_its_own_runs_back_at_once(
    boot: Boot, settings: Settings, clock: FakeClock
) -> None:
    crashed = await _crash_mid_run(boot, settings)
    stamp = clock.now()
    async with boot() as rt:  # node-a again; the clock has not moved: no lease has expired
        team = Team(rt)
        first, *_ = await team.runs(crashed["thread"])
        assert (first.id, first.status) == (crashed["run"], "failed")
        assert first.error is not None and "restarted" in first.error["message"]
        await team.idle()
        runs = await team.runs(crashed["thread"])
        assert [(r.status, r.trigger_message_ids) for r in runs] == [
            ("failed", [crashed["message"]]),
            ("completed", [crashed["message"]]),  # its mail was queued again and answered once
        ]
        messages = await team.messages(crashed["thread"])
        assert _notices(messages) == [crashed["run"]]
        assert [m["run_id"] for m in messages if m["content"] == "built it"] == [runs[1].id]
    assert clock.now() == stamp


@on_postgres
@pytest.mark.parametrize("backend", ["postgresql"], indirect=False)
async def test_another_node_leaves_them_until_their_lease_expires(
    boot: Boot, settings: Settings, clock: FakeClock
) -> None:
    crashed = await _crash_mid_run(boot, settings)
    settings.node_id = "node-b"
    async with boot() as rt:
        team = Team(rt)
        await rt.system.maintain()
        assert [r.status for r in await team.runs(crashed["thread"])] == ["running"]
        assert _notices(await team.messages(crashed["thread"])) == []
        clock.advance(settings.lease_seconds + 1)  # node-a never renews it
        await rt.system.maintain()
        await team.idle()
        runs = await team.runs(crashed["thread"])
        assert [(r.id, r.status) for r in runs][:1] == [(crashed["run"], "failed")]
        assert runs[0].error is not None and "(node node-a) stopped renewing it" in runs[0].error["message"]
        assert [r.status for r in runs] == ["failed", "completed"]
        assert _notices(await team.messages(crashed["thread"])) == [crashed["run"]]


@on_postgres
@pytest.mark.parametrize("backend", ["postgresql"], indirect=False)
async def test_a_name_held_by_a_live_process_is_refused_and_defaults_move_on(
    boot: Boot, settings: Settings, clock: FakeClock
) -> None:
    settings.node_id = "node-a"
    async with boot() as first:
        twin = settings.model_copy(update={"node_id": "node-a"})
        with pytest.raises(node.NodeInUse, match="node id 'node-a' is held by another live process"):
            async with Runtime(twin, clock=clock):
                pass
        assert first.system.owner == "node-a"
    default = settings.model_copy(update={"node_id": None})
    async with Runtime(default, clock=clock) as one, Runtime(default, clock=clock) as two:
        base = node.default_name(default)
        assert (one.system.owner, two.system.owner) == (base, f"{base}-2")


@pytest.mark.slow
@on_postgres
def test_a_worker_whose_name_is_held_exits_with_one_clear_line(tmp_path: Path) -> None:
    assert PG_URL is not None
    settings = Settings(data_dir=tmp_path, database_url=PG_URL, node_id="node-a")

    async def start_a_worker_beside_a_live_node_a() -> subprocess.CompletedProcess[str]:
        await reset_postgres(PG_URL)
        async with Runtime(settings):
            env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBOT_")}
            env.update(OPENBOT_FORBID_REAL_MODELS="1", OPENBOT_DATABASE_URL=PG_URL, OPENBOT_NODE_ID="node-a")
            command = [str(Path(sys.executable).with_name("openbot")), "worker", "--data-dir", str(tmp_path)]
            return await asyncio.to_thread(
                subprocess.run, command, env=env, capture_output=True, text=True, timeout=60
            )

    done = asyncio.run(start_a_worker_beside_a_live_node_a())
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr  # one line that says why, before anything starts
    assert done.stderr == (
        "openbot: node id 'node-a' is held by another live process; "
        "every process needs its own OPENBOT_NODE_ID\n"
    )


@pytest.mark.slow
@on_postgres
def test_serve_with_workers_names_them_after_its_node_and_stops_them(tmp_path: Path) -> None:
    assert PG_URL is not None
    asyncio.run(reset_postgres(PG_URL))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBOT_")}
    env.update(OPENBOT_FORBID_REAL_MODELS="1", OPENBOT_DATABASE_URL=PG_URL, OPENBOT_NODE_ID="eu-1")
    openbot = str(Path(sys.executable).with_name("openbot"))
    command = [openbot, "serve", "--port", str(free_port()), "--data-dir", str(tmp_path), "--workers", "2"]
    serve = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        names = {"eu-1", "eu-1-w1", "eu-1-w2"}  # the API process, then its two workers
        wait_until(lambda: names <= held_node_names(PG_URL), "the three names to be held", timeout=60)
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    # SIGTERM stopped the workers too: nothing holds their names any more.
    wait_until(lambda: not names & held_node_names(PG_URL), "the workers to stop with serve", timeout=30)
