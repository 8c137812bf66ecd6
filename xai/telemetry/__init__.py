"""OpenTelemetry traces and metrics for xai, by the GenAI semantic conventions.

Install the extra (``pip install 'xai-actors[otel]'``), then hand a ``Telemetry`` to an
``Agent``, a ``Session`` or a ``Query``::

    from xai.telemetry import Telemetry

    telemetry = Telemetry(tracer_provider=my_tracer_provider, meter_provider=my_meter_provider)
    agent = Agent(directory, provider, telemetry=telemetry)

This package is the only place in xai that imports OpenTelemetry; the layers only
call the object they were given, so without one nothing of OpenTelemetry is loaded
and nothing is done. See docs/telemetry.md.
"""

try:
    from xai.telemetry._telemetry import CAPTURE_CONTENT_ENV, Telemetry
except ImportError as exc:  # pragma: no cover - only without the extra
    if not (exc.name or "").startswith("opentelemetry"):
        raise
    raise ImportError(
        "xai.telemetry needs the OpenTelemetry API: pip install 'xai-actors[otel]'"
    ) from exc

__all__ = ["CAPTURE_CONTENT_ENV", "Telemetry"]
