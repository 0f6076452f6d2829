#!/usr/bin/env bash
# Regenerates kemu/api/v1 and kemu/api/cloud/v1 from proto/. The generated code is committed; `make check-gen`
# (run by CI) fails when the committed copy differs from a fresh generation.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
out=${1:-.}
"$python" -m grpc_tools.protoc -I proto \
  --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
  proto/kemu/api/v1/types.proto proto/kemu/api/v1/api.proto proto/kemu/api/v1/clock.proto \
  proto/kemu/api/cloud/v1/cloud.proto
