"""Where a model stands with its background worker, for ``ov-autoplace cache list``.

Read-only: the worker's folder (``worker_files.py``: a live lock, a failure record) and the evidence stored with
the placement-cache entry (``verification.py``) say whether the model is pending, failed (and why), verified,
profiled or still on the prior. Kept apart from the worker (``background_worker.py``), so listing the cache
loads none of the code that spawns and runs workers.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from ov_autoplace.model.loading import DAMAGED_FILE_ERRORS
from ov_autoplace.decision.worker_files import lock_pid, pid_alive, read_failure, worker_digest, worker_files
from ov_autoplace.decision.verification import evidence_intact, provisional_intact
from ov_autoplace.placement.assignment import Placement


def model_state(root: str | os.PathLike, key: Mapping[str, Any], payload: Mapping[str, Any]) -> str:
    """pending / failed (reason) / verified / provisional / profiled / prior, for one placement-cache entry."""
    files = worker_files(root, worker_digest(key))
    pid = lock_pid(files["lock"]) if os.path.lexists(files["lock"]) else 0
    if pid and pid_alive(pid):
        return f"pending (worker pid {pid} is measuring)"
    record = read_failure(files["failed"]) if os.path.lexists(files["failed"]) else {"failures": 0}
    if record.get("failures"):
        return f"failed {record['failures']}x ({record.get('reason', 'no reason recorded')})"
    try:
        placement = Placement.from_dict(payload)
    except DAMAGED_FILE_ERRORS:
        return "unreadable"
    tags = (placement.strategy.split(":", 1)[-1]).split("+")
    evidence = placement.verification or {}
    if evidence_intact(placement):
        return f"verified ({evidence.get('decision')}: {evidence.get('chosen')})"
    if provisional_intact(placement):
        return f"provisional ({evidence.get('chosen')} won on a loaded machine; verified again once it is quiet)"
    if evidence.get("decision") == "abstained":
        return f"pending (the last verification abstained: {evidence.get('reason')})"
    if evidence:
        return "evidence edited or of another rule (verified again on the next start)"
    if "pending" in tags or "live" in tags:
        return "pending (awaiting verification by the background worker)"
    if tags[0] == "profile":
        return "profiled (not verified)"
    if tags[0] == "prior":
        return "prior (not measured; profile='background' or 'now' measures it)"
    return f"placed by {placement.strategy}"


__all__ = ["model_state"]
