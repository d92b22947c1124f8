#!/usr/bin/env bash
# Wheels a GPU machine without a package index (Python 3.12) lacks, fetched into .whl/ to be
# copied there with the checkout; scripts/gpu_suite.sh installs them. Such a machine is expected
# to have torch, numpy, pyarrow, typer, rich, psutil, jinja2, matplotlib, pyyaml, httpx, anyio,
# h11 and idna already.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
for pkg in pydantic==2.13.4 pydantic-core==2.46.4 annotated-types typing-inspection \
           openai==3.57.0 httpx2==2.16.2 httpcore2==2.16.2 truststore distro jiter sniffio; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl "$pkg"
done
ls .whl
