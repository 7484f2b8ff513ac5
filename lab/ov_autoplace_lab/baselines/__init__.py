"""Learned placement baselines and HSDAG as budgeted searches (training side: needs torch, the ``train`` extra).

* :mod:`.search` - :class:`LearnedSearch`, :func:`run_search` (one sample budget, learning curves) and
  :class:`LearnedSearchStrategy` (any search as a placement strategy);
* :mod:`.placeto` - Placeto (Addanki et al., NeurIPS 2019);
* :mod:`.rnn_placer` - the RNN-based placer (Mirhoseini et al., ICML 2017);
* :mod:`.hsdag_search` - HSDAG in the paper's mode (from scratch) and pretrained + fine-tuned.

Names are imported lazily, so ``import ov_autoplace_lab.baselines`` does not import torch.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "LearnedSearch": ".search", "LearnedSearchStrategy": ".search", "SearchResult": ".search",
    "run_search": ".search", "PlacetoSearch": ".placeto", "RNNPlacerSearch": ".rnn_placer",
    "HSDAGPaperSearch": ".hsdag_search", "HSDAGFineTuneSearch": ".hsdag_search",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
