"""Client CPU per ``run_agent`` call on each orchestrator, as a ratio to ``lightweight``.

The call: a scenario with one built-in tool; the model asks for ``calculate_rate``, xai runs
it, and the model answers with the JSON of a ``general_answer`` (the same scripted replies
for every orchestrator). ``lightweight`` (xai's Session/Query), ``openai-agents`` and
``langgraph`` talk to the OpenAI-wire test server, ``dify`` to the Dify Service API double;
both servers run as processes of their own, so the CPU time measured here is the client's
alone (``time.process_time()``: every thread of this process, the peers' included). Each
orchestrator gets warm-up calls (imports, first connections), then the orchestrators take
turns for ``--repeats`` rounds of ``--runs`` calls, and the medians are compared. Every call
checks its answer and its tool record, so a broken call cannot pass for a fast one.

    python bench/adapters.py            # 40 calls x 3 rounds per orchestrator
    python bench/adapters.py --quick    # 10 calls x 3 rounds

The last line of output is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _common
import anyio
import msgspec
from _common import Server, exit_on_sigterm

from xai.core import BUILTIN_TOOLS, ORCHESTRATORS, AgentResult, arun_agent
from xai.testing import DifyServer, Reply, Rule, Script, ScriptedCall

MODEL = "bench-model"
QUESTION = "Line B inspected 950 parts and found 31 defects: what is its defect rate?"
ANSWER = {"answer": "Line B's defect rate is 3.26%.", "key_points": ["31 of 950"]}
SCENARIO: dict[str, Any] = {
    "scenario_id": "bench",
    "tools": ["calculate_rate"],
    "model": {"model": MODEL},
}


def script() -> Script:
    call = ScriptedCall(
        name="calculate_rate",
        arguments={"numerator": 31, "denominator": 950, "kind": "defect_rate"},
    )
    return Script(
        rules=[
            Rule(last_role="user", reply=Reply(tool_calls=(call,))),
            Rule(last_role="tool", reply=Reply(text=json.dumps(ANSWER), text_chunks=10)),
        ]
    )


def serve_dify(script_path: Path) -> int:
    """``--serve-dify``: the Dify double in this process until SIGTERM (a child of the bench)."""
    loaded = msgspec.json.decode(script_path.read_bytes(), type=Script)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with DifyServer(loaded, tools=BUILTIN_TOOLS.values()) as server:
        print(f"listening on {server.base_url} key {server.api_key}", flush=True)
        stop.wait()
    return 0


class DifyProcess:
    def __init__(self) -> None:
        handle, name = tempfile.mkstemp(prefix="xai-bench-dify-", suffix=".json")
        with os.fdopen(handle, "wb") as file:
            file.write(msgspec.json.encode(script()))
        self.script_path = Path(name)
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> tuple[str, str]:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve-dify", str(self.script_path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        stdout = self.process.stdout
        assert stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        line = lines.get(timeout=60)
        _, _, url, _, key = line.split()
        return url, key

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            if self.process.stdout is not None:
                self.process.stdout.close()
        self.script_path.unlink(missing_ok=True)


def check(result: AgentResult, name: str) -> None:
    if result.status != "success" or result.answer != ANSWER["answer"]:
        raise RuntimeError(f"{name}: a broken call ({result.status}: {result.error})")
    (call,) = result.tool_calls
    if not call.success or call.result["percent"] != 3.26:
        raise RuntimeError(f"{name}: the tool call went wrong: {call}")


async def cpu_per_call(name: str, runs: int) -> float:
    """Client CPU seconds per call, over ``runs`` calls."""
    started = time.process_time()
    for _ in range(runs):
        check(await arun_agent(SCENARIO, QUESTION, {"orchestrator": name}), name)
    return (time.process_time() - started) / runs


async def measure(runs: int, repeats: int, warmup: int) -> dict[str, list[float]]:
    for name in ORCHESTRATORS:
        await cpu_per_call(name, warmup)
    figures: dict[str, list[float]] = {name: [] for name in ORCHESTRATORS}
    for _ in range(repeats):
        for name in ORCHESTRATORS:
            figures[name].append(await cpu_per_call(name, runs))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="10 calls x 3 rounds")
    parser.add_argument("--serve-dify", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_dify is not None:
        raise SystemExit(serve_dify(args.serve_dify))
    if args.quick:
        args.runs = 10
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    wire = Server(msgspec.json.encode(script()))
    dify = DifyProcess()
    try:
        base_url = wire.start()
        dify_url, dify_key = dify.start()
        os.environ.update(
            {
                "LLM_BASE_URL": base_url,
                "LLM_API_KEY": "bench-key",
                "LLM_MODEL": MODEL,
                "DIFY_BASE_URL": dify_url,
                "DIFY_API_KEY": dify_key,
            }
        )
        figures = anyio.run(measure, args.runs, args.repeats, args.warmup)
    finally:
        dify.stop()
        wire.stop()
    medians = {name: statistics.median(values) for name, values in figures.items()}
    base = medians["lightweight"]
    print(f"client CPU per run_agent call (median of {args.repeats} rounds x {args.runs} calls):")
    for name in ORCHESTRATORS:
        print(
            f"  {name:14} {medians[name] * 1000:8.2f} ms   {medians[name] / base:5.2f}x lightweight"
        )
    result: dict[str, Any] = {
        "runs": args.runs,
        "repeats": args.repeats,
        **{f"{n.replace('-', '_')}_cpu_ms": round(medians[n] * 1000, 3) for n in ORCHESTRATORS},
        **{
            f"{n.replace('-', '_')}_ratio": round(medians[n] / base, 3)
            for n in ORCHESTRATORS
            if n != "lightweight"
        },
    }
    print(json.dumps(result))


_ = _common  # the bench helpers live there (run as `python bench/adapters.py`)

if __name__ == "__main__":
    main()
