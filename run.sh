#!/usr/bin/env bash
# One entry point for people and CI.
#   bash run.sh        set up (venv, build, zoo) and run the main job
#   bash run.sh test   set up and run the test suite: the fast tier, then the slow tier
#   bash run.sh wheels set up and build a manylinux wheel per CPython found, plus the sdist, into dist/
#                      (each checked with auditwheel and in a fresh venv; tools/wheels.py, docs/development.md)
# Nothing needs installing by hand: a venv is created in ./.venv (override with
# OV_AUTOPLACE_VENV) and everything comes from the package registries.
set -euo pipefail
cd "$(dirname "$0")"
# Free space, in GB, of the filesystem holding $1 (or its nearest existing parent).
free_gb() {
  local dir="$1"
  while [ ! -e "$dir" ]; do dir="$(dirname "$dir")"; done
  df -Pk "$dir" | awk 'NR==2 {print int($4 / 1048576)}'
}

# Where the venv goes. A new venv takes ~6.5 GB: torch 2.14.1 from PyPI is the CUDA build (no CPU build of it is on
# PyPI) and loads its 3 GB of CUDA libraries even on a CPU. pip's "No space left on device" halfway through an
# install says none of that, so it is settled first. OV_AUTOPLACE_VENV is the caller's choice: too little room
# there stops here. Otherwise ./.venv, unless the checkout's disk is short (CI machines have come with 5 GB) and
# the memory-backed $OV_AUTOPLACE_SHM (default /dev/shm) has the room and memory to spare for the tests: then
# one venv per checkout there, found again by the next run, gone at reboot. Room nowhere stops and says so.
need_venv=8 need_shm=16 need_tests=3
choose_venv() {
  local shm="${OV_AUTOPLACE_SHM:-/dev/shm}" shm_venv free
  if [ -n "${OV_AUTOPLACE_VENV:-}" ]; then VENV="$OV_AUTOPLACE_VENV"; return; fi
  VENV=.venv
  shm_venv="$shm/ov_autoplace-venv-$(printf %s "$PWD" | md5sum | cut -c1-12)"
  if [ -x "$VENV/bin/python" ]; then return; fi
  if [ -x "$shm_venv/bin/python" ]; then VENV="$shm_venv"; return; fi
  free="$(free_gb "$VENV")"
  if [ "$free" -ge "$need_venv" ]; then return; fi
  if [ -d "$shm" ] && [ -w "$shm" ] && [ "$(free_gb "$shm")" -ge "$need_shm" ]; then
    echo "run.sh: ${free} GB free on the checkout's disk, short of the ${need_venv} GB a new venv needs:" \
         "the venv goes to $shm_venv (memory-backed, kept until reboot; OV_AUTOPLACE_VENV picks a place)." >&2
    VENV="$shm_venv"
    export PIP_NO_CACHE_DIR=1  # the cache of downloads would fill the short disk
  fi
}

# Too little space for a new venv fails here; little for the tests (zoo IRs, the wheel test's ~1 GB venv) warns.
check_disk() {
  local free
  free="$(free_gb "$VENV")"
  if [ ! -x "$VENV/bin/python" ] && [ "$free" -lt "$need_venv" ]; then
    echo "run.sh: ${free} GB free where the venv goes ($VENV); a new venv needs about ${need_venv} GB." >&2
    echo "  Free space (old clones' .venv directories, /tmp/pytest-of-$(id -un)) or set OV_AUTOPLACE_VENV" \
         "to a path on a larger disk." >&2
    exit 1
  fi
  free="$(free_gb .)"
  if [ "$free" -lt "$need_tests" ]; then
    echo "run.sh: warning: ${free} GB free; the tests' wheel-install test and the zoo need about 2 GB." >&2
  fi
}

setup() {
  choose_venv
  check_disk
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
  fi
  # shellcheck disable=SC1091
  . "$VENV/bin/activate"
  python -m pip install -q --upgrade pip >/dev/null
  # Build tools and the exact OpenVINO the extension links go into the venv
  # first, then the package builds without isolation against that OpenVINO.
  # The OpenVINO pin is pyproject.toml's (the extension loads only with the release it was built against).
  python -m pip install -q "scikit-build-core>=0.10" "pybind11>=3.0" "setuptools>=70.1" "openvino==2026.4.1" numpy
  # The two distributions, editable: the runtime (with the C++ extension), then the lab that registers with it.
  # The dev dependency group (tests, auditwheel) is no extra: apps never see it in the published metadata.
  python -m pip install -q --no-build-isolation --group dev -e .
  # Not the lab's llm extra: optimum-intel 2.2.0 needs transformers < 5.6, whose BERT the zoo cannot trace
  # (transformers 5.5's masks read a traced length as a tensor); docs/llm.md says how to run the LLM tests.
  python -m pip install -q --no-build-isolation -e "./lab[zoo,train,pictures]"
  python -c "import ov_autoplace, ov_autoplace_lab, openvino; print('ov_autoplace', ov_autoplace.__version__, '+ lab', ov_autoplace_lab.__version__, 'on OpenVINO', openvino.get_version())"
}

cmd="${1:-main}"
case "$cmd" in
  main)
    setup
    python -m ov_autoplace_lab.models build
    python benchmarks/main_job.py
    ;;
  test)
    setup
    shift || true
    # The fast tier (pytest's default: -m 'not slow', pyproject.toml), then the slow tier (zoo models,
    # wheel installs, the browser). Exit code 5 of the slow tier means it selected no test (e.g. -k).
    # Each tier on 2 pytest-xdist workers (OV_AUTOPLACE_TEST_WORKERS; a later -n in the arguments wins, -n 0 runs
    # serially): much of the suite is single-threaded Python, pip or g++ while the other core idles.
    # loadfile: a test file runs in one worker, so its module fixtures are built once (the wheel-install tests share
    # one venv); the sdist both wheel files use is built once per run (tests/wheel_builds.py). Not loadgroup:
    # pytest-xdist 3.8 names a group by setting item._nodeid, which pytest 9 no longer reads - no group held.
    workers=(-n "${OV_AUTOPLACE_TEST_WORKERS:-2}" --dist loadfile)
    python -m pytest tests "${workers[@]}" "$@"
    python -m pytest tests -m slow "${workers[@]}" "$@" || [ $? -eq 5 ]
    ;;
  wheels)
    setup
    shift || true
    python tools/wheels.py "$@"
    ;;
  *)
    echo "usage: bash run.sh [main|test [pytest args]|wheels [tools/wheels.py args]]" >&2
    exit 2
    ;;
esac
