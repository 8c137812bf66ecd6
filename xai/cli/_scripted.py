"""The demo's scripted model moved to ``xai.testing.demo_model``; this name stays for code
written against the old private path (remove once nothing imports it)."""

from xai.testing import demo_model as scripted_model

__all__ = ["scripted_model"]
