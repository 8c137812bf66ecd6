"""Adjudication on LoCoMo: what becomes of every turn, what stays reachable, and how fast.

Every turn of every LoCoMo conversation becomes a candidate exactly as the offline
eval model (``xai/eval/_scripted.py``) proposes it for ``xai eval --backend xai``
(``XaiAgentMemory`` sends ``[date] Speaker: text`` and the model proposes each user
message verbatim, its message id as evidence), and each dataset session's
candidates are adjudicated in one ``memory.adjudicate(...)`` call, as a closing
Session's are (rules mode, ``MemoryConfig(use_judge=False)``, the ledger not fsynced
as the eval's Agent runs it: ``sync_ledger=False``). One fresh memory per conversation.

Reported:

- ``decisions``: how many candidates were added, reinforced, superseded, ...
- ``reachable``: of the turns LoCoMo's questions cite as evidence, the share that is
  in the evidence of an ACTIVE fact after ingestion (a fact's evidence is read from
  the ledger: the evidence of the candidates in its ``sources``, so the figure means
  the same for ledgers written before ``Fact.evidence``). Episodes are not counted.
- ``adjudicated_per_s``: candidates decided per wall-clock second, embedding included,
  against ``embedded_per_s``: the same texts embedded by the same model in one call
  (its default batches, no cache) in the same run, each conversation's texts just
  before that conversation is adjudicated (the load of a shared machine drifts);
  ``ratio`` is the one over the other. ``embedded_per_s_session_calls`` and
  ``ratio_session_calls``: the same, with the texts embedded in the calls
  adjudication makes (one per dataset session, about 20 texts of mixed lengths). All
  embedders run with their cache off, so none reuses another's work.
- ``--profile``: a cProfile of the adjudication (main thread), top functions by
  cumulative time, printed before the JSON line.

    python bench/adjudication.py                       # all ten conversations
    python bench/adjudication.py --conversations 0 1   # a subset
    python bench/adjudication.py --per-turn            # one adjudicate call per candidate

The last line of output is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import tempfile
import time
from collections import Counter
from pathlib import Path

import anyio

from xai.eval import EvalSample, load_locomo
from xai.memory import LocalMiniLM, LongTermMemory, MemoryConfig
from xai.messages import MemoryCandidate

DATA = Path(os.environ.get("LOCOMO", "/work/shared/data/locomo10.json"))


def candidates_of(sample: EvalSample) -> list[list[MemoryCandidate]]:
    """Per dataset session, its candidates as the offline eval model proposes them."""
    out = []
    for session in sample.sessions:
        date = f"[{session.date}] " if session.date else ""
        batch = [
            MemoryCandidate(
                id=f"{sample.id}-{m.id}",
                text=f"{date}{m.speaker}: {m.text}",
                kind="fact",
                confidence=0.6,
                evidence=(m.id,),
                session_id=session.id,
            )
            for m in session.messages
            if len(f"{date}{m.speaker}: {m.text}".split()) >= 3
        ]
        out.append(batch)
    return out


async def ingest(
    sample: EvalSample, directory: Path, embedder: LocalMiniLM, per_turn: bool
) -> tuple[Counter[str], set[str], float, int]:
    """Adjudicate one conversation; (decision counts, reachable turn ids, seconds, candidates)."""
    counts: Counter[str] = Counter()
    sessions = candidates_of(sample)
    total = sum(len(batch) for batch in sessions)
    async with LongTermMemory(
        directory, embedder=embedder, config=MemoryConfig(use_judge=False), sync=False
    ) as memory:
        start = time.perf_counter()
        for batch in sessions:
            calls = [[c] for c in batch] if per_turn else [batch]
            for call in calls:
                for decision in await memory.adjudicate(call, session_id=batch[0].session_id):
                    counts[decision.kind] += 1
        settle = getattr(memory.fact_store, "settle", None)  # (code before deferred writes)
        if settle is not None:
            await settle()  # the index writes the passes deferred are part of the work
        seconds = time.perf_counter() - start
        evidence = {d.candidate.id: d.candidate.evidence for d in memory.ledger() if d.candidate}
        reachable = {
            e
            for fact in memory.facts(status="active")
            for source in fact.sources
            for e in evidence.get(source, ())
        }
    return counts, reachable, seconds, total


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", type=int, nargs="*", default=None)
    parser.add_argument("--per-turn", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    samples = load_locomo(args.data)
    chosen = args.conversations if args.conversations else list(range(len(samples)))
    samples = [samples[i] for i in chosen]

    texts = [c.text for s in samples for batch in candidates_of(s) for c in batch]
    embed_model = LocalMiniLM(cache_size=0)
    embed_model.embed_sync(texts[:64])  # load the model outside the timing
    session_model = LocalMiniLM(cache_size=0)
    session_model.embed_sync(texts[:8])
    embedder = LocalMiniLM(cache_size=0)
    embedder.embed_sync(texts[:8])
    counts: Counter[str] = Counter()
    cited = reached = 0
    seconds = one_call_s = session_calls_s = 0.0
    decided = 0
    profile = cProfile.Profile() if args.profile else None
    with tempfile.TemporaryDirectory(prefix="xai-adjudication-") as tmp:
        for n, sample in enumerate(samples):
            # The baselines on this conversation's texts just before it is adjudicated:
            # on a shared machine the load drifts, and each figure meets the same drift.
            calls = [[c.text for c in batch] for batch in candidates_of(sample)]
            start = time.perf_counter()
            embed_model.embed_sync([t for call in calls for t in call])
            one_call_s += time.perf_counter() - start
            start = time.perf_counter()
            for call in calls:
                session_model.embed_sync(call)
            session_calls_s += time.perf_counter() - start
            if profile is not None:
                profile.enable()
            got, reachable, took, total = await ingest(
                sample, Path(tmp) / str(n), embedder, args.per_turn
            )
            if profile is not None:
                profile.disable()
            counts.update(got)
            seconds += took
            decided += total
            turns = {m.id for s in sample.sessions for m in s.messages}
            wanted = {e for q in sample.questions for e in q.evidence if e in turns}
            cited += len(wanted)
            reached += len(wanted & reachable)
            print(
                f"{sample.id}: {total} candidates, {dict(got)}, "
                f"reachable {len(wanted & reachable)}/{len(wanted)}, {total / took:.0f}/s",
                flush=True,
            )
    embedded_per_s = len(texts) / one_call_s
    embedded_per_s_session_calls = len(texts) / session_calls_s
    if profile is not None:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(30)
        print(out.getvalue())
    adjudicated_per_s = decided / seconds
    print(
        json.dumps(
            {
                "conversations": chosen,
                "candidates": decided,
                "per_turn": args.per_turn,
                "decisions": dict(sorted(counts.items())),
                "evidence_turns": cited,
                "reachable_turns": reached,
                "reachable_pct": round(100 * reached / max(cited, 1), 2),
                "adjudicated_per_s": round(adjudicated_per_s, 1),
                "embedded_per_s": round(embedded_per_s, 1),
                "ratio": round(adjudicated_per_s / embedded_per_s, 3),
                "embedded_per_s_session_calls": round(embedded_per_s_session_calls, 1),
                "ratio_session_calls": round(adjudicated_per_s / embedded_per_s_session_calls, 3),
                "load_average": os.getloadavg()[0],
            }
        )
    )


if __name__ == "__main__":
    anyio.run(main)
