"""The pretrained HSDAG policy shipped with ov_autoplace (``hsdag_v4.npz``; how it was made: ``docs/training.md`` in the repository).

Data only: load it with ``NumpyHSDAGPolicy.load(PRETRAINED_POLICY)`` (numpy, no torch) or use
``HSDAGStrategy(PRETRAINED_POLICY, cost)``.
"""

from pathlib import Path

#: Path of the shipped pretrained policy file.
PRETRAINED_POLICY = Path(__file__).with_name("hsdag_v4.npz")

__all__ = ["PRETRAINED_POLICY"]
