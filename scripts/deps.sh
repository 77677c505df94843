#!/usr/bin/env bash
# Installs the Debian 12 packages coral builds with, skipping what is there.
# Usage: scripts/deps.sh            everything: the tests, the sanitizer and
#                                   fuzz builds, the Python tests (scripts/test.sh)
#        scripts/deps.sh main       what `coral` and `import coral` need (scripts/run.sh)
# As root, or with sudo available.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libasio-dev libtbb-dev libspdlog-dev libfmt-dev catch2 libcli11-dev libbenchmark-dev
  libtorch-dev libtomlplusplus-dev gnuplot-nox
  libmujoco-dev  # the MuJoCo envs (CORAL_WITH_MUJOCO, on by default)
  libegl-dev libegl-mesa0 libgl1-mesa-dri  # MuJoCo envs' render(): an offscreen EGL context, Mesa's software GL
  libopenblas0  # takes over libblas.so.3 from the reference BLAS: PPO updates 1.5-3x faster (BENCHMARKS.md)
  libblas-dev  # cblas.h and libblas.so for the fused network engine (coral::fused), which libopenblas0 then serves
  python3 python3-dev pybind11-dev python3-numpy  # import coral (python/)
  libopenmpi-dev  # coral train --distributed (distributed/)
  libjs-dygraphs  # the live view's plots (--dashboard), embedded into the binary at build time
)
if [ "${1:-}" != main ]; then
  packages+=(
    clang-14 libclang-rt-14-dev  # the fuzz build: clang and its libFuzzer, ASan and UBSan runtimes
    python3-pytest python3-torch  # the Python tests, and the example PPO in PyTorch
    python3-venv python3-pip python3-setuptools python3-wheel  # ctest python_pip_venv: pip install into a fresh venv
    python3-cloudpickle  # gymnasium's import, for scripts/gymnasium_suite.py (by hand)
    openmpi-bin  # mpirun, for the mpi tests
    ffmpeg  # --video (encoder) and ffprobe (the video tests); `coral` runs without it, refusing --video by name
    chromium  # headless: the live view's page test (tests/training/dashboard_test.cpp) and its screenshots
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
