#!/usr/bin/env bash
# Wheels a GPU machine without a package index (Python 3.12, manylinux x86_64) lacks, fetched
# into .whl/ to be copied there with the checkout; scripts/gpu_suite.sh installs them. Such a
# machine is expected to have torch, numpy, pyarrow, typer, rich, psutil, jinja2, matplotlib,
# pyyaml, httpx, anyio, h11, idna, and transformers with its own requirements
# (huggingface-hub, tokenizers, safetensors, filelock, fsspec, requests, tqdm, packaging); for
# the RL stack also pandas, accelerate, peft, aiohttp and its kin, attrs, click, cloudpickle,
# msgpack, protobuf, prometheus-client, xxhash, zipp, pybind11 and tensorboard.
#
#   bash scripts/fetch_gpu_wheels.sh        # the agent's packages (pydantic, openai)
#   RL=1 bash scripts/fetch_gpu_wheels.sh   # and the RL stack: veRL 0.9.1 and what it imports
#   KERNELBENCH=1 bash scripts/fetch_gpu_wheels.sh  # and pydra-config, which KernelBench's
#                                           # scripts need (benchmarks/compare_with_kernelbench.py)
#
# The RL stack: veRL imports Ray even for its SFT trainer, and Ray's wheel alone is over what one
# call to the GPU machine carries, so Ray is packed as ray-VERSION.site.tar.xz, the installed
# tree without ray/jars (Java support) and Ray's application libraries (rllib, tune, serve, llm),
# which gpu_suite.sh unpacks into the same folder as the wheels. antlr4-python3-runtime
# (hydra's parser) has no wheel on PyPI: it is built here (pure Python). None of the compiled
# wheels links against libtorch.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
PLATFORM=(--python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
          --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
download() {
  for pkg in "$@"; do
    python3 -m pip download -q --no-deps --only-binary=:all: "${PLATFORM[@]}" -d .whl "$pkg"
  done
}

download pydantic==2.13.4 pydantic-core==2.46.4 annotated-types typing-inspection \
  openai==3.57.0 httpx2==2.16.2 httpcore2==2.16.2 truststore distro jiter sniffio

if [ "${RL:-0}" = 1 ]; then
  download verl==0.9.1 tensordict==0.10.0 pyvers==0.1.0 orjson importlib-metadata \
    hydra-core==1.3.8 omegaconf==2.3.1 torchdata==0.11.0 datasets==5.2.0 dill==0.4.1 \
    multiprocess==0.70.19 codetiming pylatexenc fastapi==0.165.0 starlette==1.10.0 \
    uvicorn==0.55.0 opentelemetry-api transferqueue==0.1.11 pyzmq==27.3.0 msgspec==0.23.0 \
    cachetools jsonschema jsonschema-specifications referencing rpds-py
  python3 -m pip wheel -q --no-deps -w .whl antlr4-python3-runtime==4.9.3
  ray=$(mktemp -d)
  python3 -m pip install -q --no-deps --no-compile --only-binary=:all: "${PLATFORM[@]}" \
    --target "$ray" ray==2.60.0
  # Java support and Ray's application libraries, which neither veRL nor TransferQueue import
  rm -rf "$ray"/ray/{jars,rllib,tune,serve,llm} "$ray/bin"
  XZ_OPT=-9e tar -cJf .whl/ray-2.60.0.site.tar.xz -C "$ray" .
  rm -rf "$ray"
fi
if [ "${KERNELBENCH:-0}" = 1 ]; then
  download pydra-config==0.0.17.post1
fi
ls .whl
du -sh .whl
