"""The query encoder's model file: MiniLM with int8 arithmetic, made once per machine.

The shipped model stores int8 weights but onnxruntime widens them to float32 when
it loads, so every matrix product runs in float32: about 5 ms for one question of
a dozen tokens on one core. A question is embedded while the user waits, so it
gets a copy made with ``onnxruntime.quantization.quantize_dynamic``: weights int8
per output channel, activations quantised on the fly, products on int8 units. The
feed-forward blocks' output projections stay float32: their inputs (GELU outputs)
have the widest range, and quantising them costs the most accuracy for the least
time. Measured on the shipped model (docs/memory.md): 2.9 ms against 5.0 ms per
question, cosine to the float32 vector 0.995 on average.

Documents (facts, episodes) keep the float32 model: vectors already stored never
change, and a question's vector lands next to them (same weights, finer noise).

The file is written under ``$XDG_CACHE_HOME/xai/models`` (else ``~/.cache``),
named by the source model's digest and the quantiser's version, atomically, so
processes that race each write a whole file. Making it needs the ``onnx`` package
and takes a few seconds, once.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["cache_dir", "query_model"]

_FLOAT_ONLY = (1536, 384)
"""The weight shape of the feed-forward output projections, kept in float32."""


def cache_dir(env: dict[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/xai``, else ``~/.cache/xai``."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "xai"


def query_model(source: Path, digest: str, directory: Path | None = None) -> Path:
    """The quantised copy of ``source`` (sha256 ``digest``), made if missing."""
    import onnxruntime

    directory = directory if directory is not None else cache_dir() / "models"
    target = directory / f"minilm-query-{digest[:16]}-ort{onnxruntime.__version__}.onnx"
    if target.is_file():
        return target
    directory.mkdir(parents=True, exist_ok=True)
    with _quiet_root(), tempfile.TemporaryDirectory(dir=directory, prefix=".making-") as scratch:
        prepared = Path(scratch) / "float32.onnx"
        _prepare(source, prepared)
        made = Path(scratch) / "query.onnx"
        _quantise(prepared, made)
        os.replace(made, target)  # whole or absent, whoever wins a race
    return target


@contextmanager
def _quiet_root() -> Iterator[None]:
    """The quantiser logs through the ``logging`` module's functions, which give a root
    logger without handlers a stderr handler for good (``basicConfig``): an application's
    logging is not ours to change, so the root has a null handler meanwhile."""
    root = logging.getLogger()
    if root.handlers:
        yield
        return
    null = logging.NullHandler()
    root.addHandler(null)
    try:
        yield
    finally:
        root.removeHandler(null)


def _prepare(source: Path, target: Path) -> None:
    """``source`` as the quantiser wants it (its own pre-processing): the int8 weights
    folded to float32 by onnxruntime's basic graph optimisations, shapes inferred."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    quant_pre_process(str(source), str(target), skip_symbolic_shape=True)


def _quantise(source: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(source))
    shapes = {init.name: tuple(init.dims) for init in model.graph.initializer}
    keep: list[str] = [
        node.name
        for node in model.graph.node
        if node.op_type == "MatMul" and any(shapes.get(i) == _FLOAT_ONLY for i in node.input)
    ]
    quantize_dynamic(
        str(source), str(target), per_channel=True, weight_type=QuantType.QInt8,
        nodes_to_exclude=keep,
    )  # fmt: skip
