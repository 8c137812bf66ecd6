"""Hosts of Agents on a Ray cluster (``xai[ray]``): see docs/scale-out.md.

``RayHosts`` places each Agent id on one of N named, detached ``HostActor``\\ s (a
stable hash), each an ``AgentHost`` over a root all nodes share, with the memory
indexes on a Chroma server (``HostSpec``). Every value crossing is msgspec.
"""

from xai.cluster._actor import HostActor, HostParts, HostSetup
from xai.cluster._hosts import NAMESPACE, RayHosts, host_index
from xai.cluster._setup import llm_setup
from xai.cluster._wire import HostSpec

__all__ = [
    "NAMESPACE",
    "HostActor",
    "HostParts",
    "HostSetup",
    "HostSpec",
    "RayHosts",
    "host_index",
    "llm_setup",
]
