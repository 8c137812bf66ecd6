#!/usr/bin/env bash
# Build llama-cpp-python once, portably, into a wheel cache that `make check-real` reuses.
#
# pip's own wheel cache keys a source build by its version only and ignores CMAKE_ARGS, so a
# wheel built for this CPU (GGML_NATIVE) could be reused on another; this cache holds only the
# portable build. Compiling llama.cpp takes 15-50 minutes on a 2-core machine; it runs at the
# lowest priority so the machine stays usable.
#   usage: build_wheel.sh CACHE_DIR VERSION PYTHON
set -euo pipefail
cache="$1" version="$2" python="$3"
mkdir -p "$cache"
if compgen -G "$cache/llama_cpp_python-$version-*.whl" >/dev/null; then
    exit 0
fi
echo "building llama-cpp-python $version into $cache (once; 15-50 minutes)"
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
nice -n 19 "$python" -m pip wheel --quiet --no-deps --no-binary llama-cpp-python \
    "llama-cpp-python==$version" -w "$tmp"
mv "$tmp"/llama_cpp_python-"$version"-*.whl "$cache"/
