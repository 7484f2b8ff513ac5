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
VENV="${OV_AUTOPLACE_VENV:-.venv}"

# Free space, in GB, of the filesystem holding $1 (or its nearest existing parent).
free_gb() {
  local dir="$1"
  while [ ! -e "$dir" ]; do dir="$(dirname "$dir")"; done
  df -Pk "$dir" | awk 'NR==2 {print int($4 / 1048576)}'
}

# A new venv takes ~6 GB (torch with its CUDA wheels, from the zoo/train extras) and the test suite's wheel
# test builds a second one of ~1 GB while it runs (torch linked from this one). pip's "No space left on device"
# halfway through an install says none of that, so say it first: too little space for the venv fails here,
# little for the tests warns.
check_disk() {
  local free need_venv=8 need_tests=10
  free="$(free_gb "$VENV")"
  if [ ! -x "$VENV/bin/python" ] && [ "$free" -lt "$need_venv" ]; then
    echo "run.sh: ${free} GB free where the venv goes ($VENV); a new venv needs about ${need_venv} GB." >&2
    echo "  Free space (old clones' .venv directories, /tmp/pytest-of-$(id -un)) or set OV_AUTOPLACE_VENV" \
         "to a path on a larger disk." >&2
    exit 1
  fi
  if [ "$free" -lt "$need_tests" ]; then
    echo "run.sh: warning: ${free} GB free; the tests' wheel-install test and the zoo need about 2 GB more." >&2
  fi
}

setup() {
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
