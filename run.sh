#!/usr/bin/env bash
# One entry point for people and CI.
#   bash run.sh        set up (venv, build, zoo) and run the main job
#   bash run.sh test   set up and run the test suite
# Nothing needs installing by hand: a venv is created in ./.venv (override with
# OV_AUTOPLACE_VENV) and everything comes from the package registries.
set -euo pipefail
cd "$(dirname "$0")"
VENV="${OV_AUTOPLACE_VENV:-.venv}"

setup() {
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
  fi
  # shellcheck disable=SC1091
  . "$VENV/bin/activate"
  python -m pip install -q --upgrade pip >/dev/null
  # Build tools and the exact OpenVINO the extension links go into the venv
  # first, then the package builds without isolation against that OpenVINO.
  # The OpenVINO pin is pyproject.toml's (the extension loads only with the release it was built against).
  python -m pip install -q "scikit-build-core>=0.10" "pybind11>=3.0" "openvino==2026.4.1" numpy
  python -m pip install -q --no-build-isolation -e ".[zoo,train,dev]"
  python -c "import ov_autoplace, openvino; print('ov_autoplace', ov_autoplace.__version__, 'on OpenVINO', openvino.get_version())"
}

cmd="${1:-main}"
case "$cmd" in
  main)
    setup
    python -m ov_autoplace.zoo build
    python benchmarks/main_job.py
    ;;
  test)
    setup
    shift || true
    python -m pytest tests "$@"
    ;;
  *)
    echo "usage: bash run.sh [main|test [pytest args]]" >&2
    exit 2
    ;;
esac
