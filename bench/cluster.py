"""Agents hosted on Ray against the in-process host: turns per second, client-visible latency,
where a Ray turn's extra time goes, and how many Agents one host actor holds in 2 GiB.

One run, three ways of hosting the same Agents, all talking to the same scripted
OpenAI-wire server (``python -m xai.testing serve``, a subprocess of its own):

a. ``inproc``: an ``AgentHost`` in this process (the baseline);
b. ``one_actor``: ``RayHosts(1, ...)``, one host actor on the head node;
c. ``two_nodes``: ``RayHosts(2, ...)``, one host actor on each of two Ray nodes.

The bench starts what it needs itself: a Ray head and a second Ray node on this machine
(both on 127.0.0.1, dashboard off, no usage stats, a temp dir of their own, like
tests/test_cluster_ray.py) and a Chroma server (``chroma run``, 127.0.0.1) for the host
actors' memory indexes, as docs/scale-out.md deploys them (turns do not touch the index).
The host actors run ``xai.cluster.llm_setup``: one ``OpenAIProvider`` per actor; the
in-process host gets the same provider.

Each turn: the model answers the input with text in ``--chunks`` chunks (one streamed
request). ``--clients`` clients run side by side, each on its own Agent with one open
Session whose event stream it reads from the start (``events(after=0)``, kept open);
each turn is ``submit`` then reading the stream up to its ``turn_done``. Client-visible
latency: from calling ``submit`` to receiving that ``turn_done``. Turns per second: the
turns of all clients over the wall time from the first ``submit`` to the last
``turn_done``. Each round runs a, b and c in turn on new Sessions (``--warmup`` turns
each first, not counted); figures are over all rounds (turns/s: the median of the
rounds), ratios against ``inproc`` of the same run.

CPU per turn, by process (``/proc/PID/stat``, over the timed turns): ``client`` is this
process (in ``inproc`` the host runs in it too), ``hosts`` the host actors' worker
processes, ``ray`` Ray's own ``raylet`` and ``gcs_server`` processes (the wire server is
left out: the same in all three). On a shared machine the wall-clock figures say more
about the other load than about xai (more processes get more of a contended CPU); the
CPU per turn is the figure to compare: ``*_vs_inproc_cpu_ratio``.

Where a Ray turn's extra time goes (measured on their own, same run):
``ray_call_ms_p50``: a bare call of the host actor (``pid``), the actor hop;
``host_call_ms_p50``: ``session_info`` (a host call with msgspec answers);
``ray_stream_item_ms`` / ``ray_stream_item_cpu_ms``: one item of a Ray streaming
generator (an actor yielding ``--probe-items`` small items, less one yielding none, per
item; the CPU of both ends); ``msgspec_us_per_turn``: encoding and decoding a turn's
events (msgpack); ``events_per_turn``: the events a turn makes; ``ray_items_per_turn``:
the stream items one turn took, read straight from the host actor (each item a batch of
events). ``ray_cpu_overhead_ms_per_turn`` (the one-actor CPU per turn less the
in-process one) against ``stream_cpu_ms_per_turn_estimate`` (items x item CPU) and
``unbatched_stream_cpu_ms_per_turn_estimate`` (what one item per event would cost).

Agents per actor: after the rounds, ``--rss-agents`` more Agents are started on the one
actor (each: a Session, one turn, left open) and the actor's worker process's RSS
(``/proc/PID/status``, read from here: same machine) is taken before and after;
``agents_per_actor_2gib`` is extrapolated from that: (2 GiB - RSS before) / RSS per Agent
(linear; the actor's Agents are all idle with one open Session each).

Ends with one JSON line (snake_case; ratios named ``*_ratio``). Run::

    python bench/cluster.py [--clients 8] [--turns 20] [--rounds 2] [--rss-agents 100]

Needs the ``ray`` extra (``pip install 'xai-actors[ray]'``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

# Read when Ray is imported: no usage stats, and 127.0.0.1 as every node's address.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import anyio
import httpx
import msgspec
import ray
from _common import Server, exit_on_sigterm
from ray.cluster_utils import Cluster

from xai.agent import AgentHost, OpenSession, ReadEvents, SessionInfo
from xai.cluster import HostSpec, RayHosts, host_index, llm_setup
from xai.config import LLMConfig
from xai.events import SessionEvent, TurnDone
from xai.providers import OpenAIProvider
from xai.session import EXTRACTION_MARKER
from xai.testing import Reply, Rule, Script

GIB_KIB = 1024 * 1024
TEXT = "The forecast for the coming days is mild and dry, with light winds. " * 3


class Hosting(Protocol):
    """What a client calls: ``AgentHost`` and ``RayHosts`` alike."""

    async def open_session(self, agent_id: str, request: OpenSession) -> SessionInfo: ...

    async def submit(
        self, agent_id: str, session_id: str, text: str, *, input_id: str | None = None
    ) -> str: ...

    async def events(
        self, agent_id: str, session_id: str, after: int = 0
    ) -> AsyncIterator[SessionEvent]: ...

    async def close_session(self, agent_id: str, session_id: str) -> None: ...


def script(chunks: int) -> Script:
    return Script(
        rules=[
            Rule(contains=EXTRACTION_MARKER, reply=Reply(text='{"candidates": []}')),
        ],
        default=Reply(text=TEXT, text_chunks=chunks),
    )


@dataclass
class Run:
    latencies_ms: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    turns: int = 0
    events: int = 0
    sample: list[SessionEvent] = field(default_factory=list)  # one turn's events
    cpu_ms: dict[str, float] = field(default_factory=dict)  # by group of processes


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_of(groups: dict[str, list[int]]) -> dict[str, float]:
    return {name: sum(cpu_s(pid) for pid in pids) for name, pids in groups.items()}


def ray_system_pids() -> list[int]:
    """This process's descendants named ``raylet`` or ``gcs_server`` (Ray's own)."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        pid = int(entry.name)
        names[pid] = stat[stat.index("(") + 1 : stat.rindex(")")]
        parents[pid] = int(stat.rsplit(")", 1)[1].split()[1])
    mine, changed = {os.getpid()}, True
    while changed:
        grown = mine | {pid for pid, parent in parents.items() if parent in mine}
        changed, mine = grown != mine, grown
    return sorted(pid for pid in mine if names[pid] in ("raylet", "gcs_server"))


async def until_done(stream: AsyncIterator[SessionEvent], into: list[SessionEvent]) -> None:
    async for event in stream:
        into.append(event)
        if isinstance(event.event, TurnDone):
            return
    raise RuntimeError("the stream ended before the turn did")


async def measure(
    host: Hosting,
    agent_ids: Sequence[str],
    warmup: int,
    turns: int,
    round_: int,
    groups: dict[str, list[int]],
) -> Run:
    """Every client: a new Session on its Agent, ``warmup`` turns, then (all together)
    ``turns`` timed ones; then its Session closed (not timed). The CPU time of each
    group of processes over the timed turns goes in ``cpu_ms``."""
    run = Run()
    cpu_before: dict[str, float] = {}
    warmed, go = [0], anyio.Event()
    all_warm = anyio.Event()
    ends: list[float] = []
    starts: list[float] = []

    async def client(agent_id: str) -> None:
        info = await host.open_session(agent_id, OpenSession())
        stream = (await host.events(agent_id, info.session_id, 0)).__aiter__()
        for i in range(warmup):
            await host.submit(agent_id, info.session_id, f"warm {i}")
            await until_done(stream, [])
        warmed[0] += 1
        if warmed[0] == len(agent_ids):
            all_warm.set()
        await go.wait()
        starts.append(time.perf_counter())
        for i in range(turns):
            got: list[SessionEvent] = []
            started = time.perf_counter()
            await host.submit(agent_id, info.session_id, f"round {round_} turn {i}")
            await until_done(stream, got)
            run.latencies_ms.append((time.perf_counter() - started) * 1000)
            run.events += len(got)
            if not run.sample:
                run.sample = got
        ends.append(time.perf_counter())
        if len(ends) == len(agent_ids):
            after = cpu_of(groups)
            run.cpu_ms = {k: (after[k] - cpu_before[k]) * 1000 for k in groups}
        await host.close_session(agent_id, info.session_id)
        async for _ in stream:  # to its end (the Session closed)
            pass

    async with anyio.create_task_group() as group:
        for agent_id in agent_ids:
            group.start_soon(client, agent_id)
        await all_warm.wait()
        cpu_before.update(cpu_of(groups))
        go.set()
    run.wall_s = max(ends) - min(starts)
    run.turns = len(run.latencies_ms)
    return run


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def chroma_server(path: Path) -> Iterator[int]:
    """``chroma run`` on 127.0.0.1 (its port), until the block ends."""
    command = shutil.which("chroma", path=str(Path(sys.executable).parent))
    if command is None:
        raise RuntimeError("the `chroma` command of the chromadb package is not installed")
    port = free_port()
    process = subprocess.Popen(
        [command, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # an external process: its readiness can only be asked for
            if process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {process.returncode}")
            try:
                url = f"http://127.0.0.1:{port}/api/v2/heartbeat"
                if httpx.get(url, timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("chroma run did not answer within 60s")
            time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def ray_cluster(temp: Path) -> Iterator[Cluster]:
    """A head and a second node on 127.0.0.1 (resources ``xai-node-0`` / ``xai-node-1``)."""
    os.environ["RAY_TMPDIR"] = str(temp)
    node: dict[str, Any] = {"num_cpus": 1, "node_ip_address": "127.0.0.1"}
    made = Cluster(
        initialize_head=True,
        head_node_args={**node, "include_dashboard": False, "resources": {"xai-node-0": 1}},
    )
    try:
        made.add_node(**node, resources={"xai-node-1": 1})
        made.wait_for_nodes()
        ray.init(
            address=made.address,
            namespace="xai",
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
        )
        yield made
    finally:
        ray.shutdown()
        made.shutdown()  # type: ignore[no-untyped-call]


def pin(node: int) -> dict[str, Any]:
    return {"resources": {f"xai-node-{node}": 0.01}, "num_cpus": 0}  # (else each holds a CPU)


class Probe:
    """A bare async actor: the cost of Ray's hop and of its streaming generator's items."""

    async def pid(self) -> int:
        return os.getpid()

    @ray.method(num_returns="streaming")
    async def items(self, count: int, size: int) -> AsyncIterator[bytes]:
        item = b"x" * size
        for _ in range(count):
            yield item


async def timed_ms(call: Any, times: int) -> list[float]:
    out = []
    for _ in range(times):
        started = time.perf_counter()
        await call()
        out.append((time.perf_counter() - started) * 1000)
    return out


async def stream_item_ms(probe: Any, count: int) -> tuple[float, float]:
    """Per item of a Ray streaming generator: reading ``count`` items less reading none;
    wall time, and CPU time of this process and the actor's (ms)."""

    async def read(n: int) -> None:
        async for ref in probe.items.remote(n, 200):
            await ref

    await read(count)  # warm
    empty = statistics.median(await timed_ms(lambda: read(0), 20))
    groups = {"both": [os.getpid(), await probe.pid.remote()]}
    cpu = cpu_of(groups)["both"]
    full = statistics.median(await timed_ms(lambda: read(count), 5))
    cpu = cpu_of(groups)["both"] - cpu
    return (full - empty) / count, cpu * 1000 / (5 * count)


def msgspec_us(events: Sequence[SessionEvent], times: int = 2000) -> float:
    """Encoding and decoding ``events`` (msgpack, as they cross to a client), in µs."""
    started = time.perf_counter()
    for _ in range(times):
        for event in events:
            msgspec.msgpack.decode(msgspec.msgpack.encode(event), type=SessionEvent)
    return (time.perf_counter() - started) / times * 1e6


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


async def items_per_turn(hosts: RayHosts, agent_id: str) -> tuple[int, int]:
    """One turn read straight from the host actor's stream: its items and its events."""
    info = await hosts.open_session(agent_id, OpenSession())
    await hosts.submit(agent_id, info.session_id, "count")
    items = events = 0
    read = ReadEvents(agent_id=agent_id, session_id=info.session_id, after=0)
    stream = hosts.actor_for(agent_id).stream.remote(msgspec.msgpack.encode(read))
    await (await stream.__anext__())  # the answer
    async for ref in stream:
        batch = msgspec.msgpack.decode(await ref, type=list[SessionEvent])
        items, events = items + 1, events + len(batch)
        if any(isinstance(e.event, TurnDone) for e in batch):
            break
    await hosts.close_session(agent_id, info.session_id)
    return items, events


async def agents_rss(hosts: RayHosts, count: int, clients: int) -> tuple[int, int]:
    """The actor's RSS (KiB) before and after ``count`` more Agents, each with a Session
    and one turn, left open."""
    pid = await hosts.pid("idle-0")
    before = rss_kib(pid)
    limit = anyio.Semaphore(clients)

    async def one(agent_id: str) -> None:
        async with limit:
            info = await hosts.open_session(agent_id, OpenSession())
            stream = await hosts.events(agent_id, info.session_id, 0)
            await hosts.submit(agent_id, info.session_id, "hello")
            await until_done(stream, [])
            await stream.aclose()  # type: ignore[attr-defined]

    async with anyio.create_task_group() as group:
        for i in range(1, count + 1):
            group.start_soon(one, f"idle-{i}")
    return before, rss_kib(pid)


def balanced_ids(count: int) -> list[str]:
    """``count`` Agent ids, half of them on each of two host actors."""
    out: list[list[str]] = [[], []]
    i = 0
    while min(len(o) for o in out) < count // 2 or sum(len(o) for o in out) < count:
        agent_id = f"user-{i}"
        side = out[host_index(agent_id, 2)]
        if len(side) < (count + 1) // 2:
            side.append(agent_id)
        i += 1
    return out[0] + out[1]


def summary(name: str, runs: list[Run]) -> dict[str, float]:
    latencies = [x for r in runs for x in r.latencies_ms]
    turns = sum(r.turns for r in runs)
    cpu = {k: sum(r.cpu_ms[k] for r in runs) / turns for k in runs[0].cpu_ms}
    return {
        f"{name}_cpu_ms_per_turn": round(sum(cpu.values()), 2),
        **{f"{name}_{k}_cpu_ms_per_turn": round(v, 2) for k, v in cpu.items() if k != "client"},
        f"{name}_client_cpu_ms_per_turn": round(cpu["client"], 2),
        f"{name}_turns_per_s": round(statistics.median(r.turns / r.wall_s for r in runs), 2),
        f"{name}_latency_ms_p50": round(statistics.median(latencies), 2),
        f"{name}_latency_ms_p95": round(percentile(latencies, 0.95), 2),
    }


async def main(args: argparse.Namespace, base_url: str, temp: Path) -> dict[str, Any]:
    config = LLMConfig(model="xai-scripted", base_url=base_url, api_key="bench", timeout=30.0)
    setup = functools.partial(llm_setup, msgspec.json.encode(config))
    ids = balanced_ids(args.clients)
    runs: dict[str, list[Run]] = {"inproc": [], "one_actor": [], "two_nodes": []}
    with chroma_server(temp / "chroma") as port:
        provider = OpenAIProvider(config)
        inproc = AgentHost(temp / "inproc", lambda _: provider)
        one = RayHosts(
            1,
            HostSpec(root=str(temp / "one"), chroma_host="127.0.0.1", chroma_port=port),
            setup,
            prefix="bench-one-",
            options_for=lambda _: pin(0),
        )
        two = RayHosts(
            2,
            HostSpec(root=str(temp / "two"), chroma_host="127.0.0.1", chroma_port=port),
            setup,
            prefix="bench-two-",
            options_for=pin,
        )
        probe = ray.remote(Probe).options(**pin(0), max_concurrency=100).remote()
        try:
            async with inproc:
                pids: dict[str, list[int]] = {}
                for name, hosts in (("one_actor", one), ("two_nodes", two)):
                    # (started here, untimed: their imports, their embedder)
                    pids[name] = sorted({await hosts.pid(agent_id) for agent_id in ids})
                me, system = [os.getpid()], ray_system_pids()
                groups = {
                    "inproc": {"client": me},
                    "one_actor": {"client": me, "hosts": pids["one_actor"], "ray": system},
                    "two_nodes": {"client": me, "hosts": pids["two_nodes"], "ray": system},
                }
                for round_ in range(args.rounds):
                    for name, host in (("inproc", inproc), ("one_actor", one), ("two_nodes", two)):
                        hosting: Hosting = host
                        run = await measure(
                            hosting, ids, args.warmup, args.turns, round_, groups[name]
                        )
                        runs[name].append(run)
                        cpu = ", ".join(f"{k} {v / run.turns:.1f}" for k, v in run.cpu_ms.items())
                        print(
                            f"round {round_ + 1} {name}: {run.turns / run.wall_s:.1f} turns/s, "
                            f"p50 {statistics.median(run.latencies_ms):.1f} ms, "
                            f"p95 {percentile(run.latencies_ms, 0.95):.1f} ms; "
                            f"CPU ms per turn: {cpu}",
                            flush=True,
                        )
                hop = await timed_ms(lambda: one.actors[0].pid.remote(), 200)
                info = await one.open_session(ids[0], OpenSession())
                call = await timed_ms(lambda: one.session_info(ids[0], info.session_id), 200)
                await one.close_session(ids[0], info.session_id)
                item_ms, item_cpu_ms = await stream_item_ms(probe, args.probe_items)
                items, events = await items_per_turn(one, ids[0])
                before, after = await agents_rss(one, args.rss_agents, args.clients)
        finally:
            await provider.aclose()
            for actor in (*one.actors, *two.actors, probe):
                ray.kill(actor, no_restart=True)

    out: dict[str, Any] = {
        "clients": args.clients,
        "turns_per_client": args.turns,
        "rounds": args.rounds,
        "text_chunks": args.chunks,
    }
    for name, measured in runs.items():
        out |= summary(name, measured)
    base = out["inproc_turns_per_s"], out["inproc_latency_ms_p50"]
    for name in ("one_actor", "two_nodes"):
        out[f"{name}_vs_inproc_turns_per_s_ratio"] = round(out[f"{name}_turns_per_s"] / base[0], 3)
        out[f"{name}_vs_inproc_latency_p50_ratio"] = round(
            out[f"{name}_latency_ms_p50"] / base[1], 3
        )
    for name in ("one_actor", "two_nodes"):
        out[f"{name}_vs_inproc_cpu_ratio"] = round(
            out[f"{name}_cpu_ms_per_turn"] / out["inproc_cpu_ms_per_turn"], 3
        )
    out["two_nodes_vs_one_actor_turns_per_s_ratio"] = round(
        out["two_nodes_turns_per_s"] / out["one_actor_turns_per_s"], 3
    )
    all_inproc = runs["inproc"]
    events_per_turn = sum(r.events for r in all_inproc) / sum(r.turns for r in all_inproc)
    overhead = out["one_actor_cpu_ms_per_turn"] - out["inproc_cpu_ms_per_turn"]
    stream_ms = items * item_cpu_ms
    per_agent = (after - before) / args.rss_agents
    out |= {
        "events_per_turn": round(events_per_turn, 1),
        "ray_items_per_turn": items,
        "ray_events_per_item": round(events / items, 1),
        "ray_call_ms_p50": round(statistics.median(hop), 3),
        "host_call_ms_p50": round(statistics.median(call), 3),
        "ray_stream_item_ms": round(item_ms, 4),
        "ray_stream_item_cpu_ms": round(item_cpu_ms, 4),
        "msgspec_us_per_turn": round(msgspec_us(all_inproc[0].sample), 1),
        "ray_cpu_overhead_ms_per_turn": round(overhead, 2),
        "stream_cpu_ms_per_turn_estimate": round(stream_ms, 2),
        "unbatched_stream_cpu_ms_per_turn_estimate": round(events_per_turn * item_cpu_ms, 2),
        "stream_share_of_overhead_ratio": round(stream_ms / overhead, 3) if overhead > 0 else None,
        "rss_agents": args.rss_agents,
        "actor_rss_mib_before": round(before / 1024, 1),
        "actor_rss_kib_per_agent": round(per_agent, 1),
        "agents_per_actor_2gib": int((2 * GIB_KIB - before) / per_agent) if per_agent > 0 else None,
    }
    return out


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8, help="Agents taking turns at once")
    parser.add_argument("--turns", type=int, default=20, help="timed turns per client per round")
    parser.add_argument("--warmup", type=int, default=2, help="untimed turns per client first")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--chunks", type=int, default=20, help="text chunks per reply")
    parser.add_argument("--probe-items", type=int, default=400)
    parser.add_argument("--rss-agents", type=int, default=100, help="Agents for the RSS figure")
    return parser.parse_args()


def run() -> dict[str, Any]:
    args = parse()
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    server = Server(msgspec.json.encode(script(args.chunks)))
    with tempfile.TemporaryDirectory(prefix="xb", dir="/tmp") as tmp:  # (short socket paths)
        temp = Path(tmp)
        try:
            base_url = server.start()
            with ray_cluster(temp / "ray"):
                return anyio.run(main, args, base_url, temp)
        finally:
            server.stop()


if __name__ == "__main__":
    result = run()
    print(json.dumps(result), flush=True)
    sys.exit(0)
