"""Dynamic-shape variants of the zoo, the shapes real applications export.

* CNNs (``inception_v3``, ``resnet50``): the static IR with a dynamic batch
  (``model.reshape`` to ``[-1, 3, H, W]``, as an application serving batches
  does); no torch needed.
* ``bert_base``: dynamic batch *and* sequence length. Reshaping the static IR
  is not enough there (its position ids were traced as a ``[1, 128]``
  constant), so it is converted again from torch with ``[-1, -1]`` inputs and
  cached beside the static IR as ``bert_base_dynamic.xml`` (needs the ``zoo`` extra).

``DYNAMIC_ZOO`` maps each name to the shapes the tests run it at.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings

import openvino as ov

from ov_autoplace_lab.models import _BUILDERS, build, cache_dir

#: name -> list of input shapes to check outputs at (input name -> shape).
DYNAMIC_ZOO: dict[str, list[dict[str, list[int]]]] = {
    "inception_v3": [{"x": [1, 3, 299, 299]}, {"x": [4, 3, 299, 299]}],
    "resnet50": [{"x": [1, 3, 224, 224]}, {"x": [4, 3, 224, 224]}],
    "bert_base": [{"input_ids": [b, s], "attention_mask": [b, s]} for b, s in ((1, 128), (4, 32), (1, 200))],
}


def _bert_dynamic_xml() -> os.PathLike:
    xml = cache_dir() / "bert_base_dynamic.xml"
    if xml.exists() and xml.with_suffix(".bin").exists():
        return xml
    net, example, shapes = _BUILDERS["bert_base"]()
    import torch  # present: the builder imported it

    inputs = [(ov.PartialShape([-1, -1]), etype) for _, etype in shapes.values()]
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer and transformers deprecation chatter, as in the static build
        model = ov.convert_model(net, example_input=example, input=inputs)
    model.set_friendly_name("bert_base_dynamic")
    model.outputs[0].get_tensor().add_names({"last_hidden_state"})
    xml.parent.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".bert_base_dynamic-", dir=xml.parent)
    try:  # written aside and moved in, .xml last, so a half build is never read
        ov.save_model(model, os.path.join(tmp, xml.name), compress_to_fp16=False)
        os.replace(os.path.join(tmp, xml.with_suffix(".bin").name), xml.with_suffix(".bin"))
        os.replace(os.path.join(tmp, xml.name), xml)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return xml


def load_dynamic(name: str, core: ov.Core | None = None) -> ov.Model:
    """The dynamic variant of zoo model ``name`` (see the module docstring)."""
    if name not in DYNAMIC_ZOO:
        raise ValueError(f"no dynamic variant of {name!r}; choose from {sorted(DYNAMIC_ZOO)}")
    core = core or ov.Core()
    if name == "bert_base":
        return core.read_model(_bert_dynamic_xml())
    model = core.read_model(build(name))
    static = list(model.inputs[0].get_partial_shape().to_shape())
    model.reshape({0: ov.PartialShape([-1] + [int(d) for d in static[1:]])})
    return model


__all__ = ["DYNAMIC_ZOO", "load_dynamic"]
