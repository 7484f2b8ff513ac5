"""The hostile probe (``tools/hostile_probe.py``) as a test: every case in its own process with its own cache
root and a timeout; none may hang, write outside its root, compute a wrong output, end in an untyped error or
end outside the outcomes it accepts (docs/cache.md, "The hostile probe")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MIN_CASES = 150
BAD = ("hang", "outside the root", "wrong output", "untyped error")


@pytest.mark.slow
def test_the_hostile_probe_finds_nothing(tmp_path):
    out = tmp_path / "probe.json"
    run = subprocess.run([sys.executable, str(REPO / "tools" / "hostile_probe.py"), "--jobs", "2", "--json",
                          str(out)], capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert out.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    cases = json.loads(out.read_text())["cases"]
    summary = run.stdout.strip().splitlines()[-2:]
    assert len(cases) >= MIN_CASES, summary
    bad = [f"{c['case']}: {c['outcome']} ({c['detail'][:200]})" for c in cases
           if c["outcome"] in BAD or not c["expected"]]
    assert not bad, "\n".join(bad[:30]) + "\n" + "\n".join(summary)
    assert run.returncode == 0, run.stderr[-2000:]
    families = {c["family"] for c in cases}
    assert {"hostile entry file", "hostile root", "umask", "bad CLI input", "crafted worker spec"} <= families
    assert sum(c["outcome"] == "typed error" for c in cases) >= 50 and \
        sum(c["outcome"] in ("correct", "healed with WARNING") for c in cases) >= 50, "both kinds are exercised"
