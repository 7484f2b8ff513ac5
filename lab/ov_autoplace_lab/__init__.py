"""ov_autoplace_lab: the research side of ov_autoplace (distribution ``ov-autoplace-lab``).

Training the HSDAG policy, the learned baselines (Placeto, the RNN placer, HSDAG search), the paper's
benchmark, the pictures, the model zoo builders (``ov_autoplace_lab.models``, from the repository's top-level
``models/``), fitting the simulated platforms and the ``show / compare / whatif / bench / train`` commands.

It depends on the runtime ``ov_autoplace`` and registers with it through entry points (``lab/pyproject.toml``):
strategies in the group ``ov_autoplace.strategies``, commands in ``ov_autoplace.commands``. The runtime never
imports this package; an app that installs only the runtime gets a one-line error naming
``pip install ov-autoplace-lab`` when it asks for one of these.
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("ov-autoplace-lab")
except PackageNotFoundError:  # run from a checkout without installing
    __version__ = "0+unknown"
