"""Model zoo: the benchmark graphs, built locally as OpenVINO IR (``ov-autoplace`` needs the ``zoo`` extra to build).

The placement tool is evaluated on Inception-V3, ResNet-50 and BERT-base.
Their *topology* is what matters to placement, not trained weights, so each
model is built from its reference PyTorch definition with random weights
(seeded, so the IR is reproducible), converted with ``openvino.convert_model``
and cached as IR.  No weights are ever downloaded and no model hub is touched.

The IRs are large (about 100 MB for the CNNs and 440 MB for BERT in fp32), so
they live in a user cache directory, never in the repository.

torch, torchvision and transformers are needed only to *build* an IR; they are
imported lazily so ``load`` of an already-built IR needs just openvino.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import shutil
import tempfile
import time
import warnings
from typing import Any, Callable

import openvino as ov

log = logging.getLogger(__name__)

ZOO = ("inception_v3", "resnet50", "bert_base")

#: Environment variable that overrides the cache directory.
ENV_VAR = "OV_AUTOPLACE_ZOO_DIR"

from ov_autoplace_lab.models._optional import optional_import as _import  # noqa: E402
# In a source checkout the package sits at <repo>/models/; an installed
# wheel has no repository around it (then nothing is refused).
_PKG_PARENT = pathlib.Path(__file__).resolve().parents[1]
_REPO_ROOT = _PKG_PARENT if (_PKG_PARENT / "pyproject.toml").is_file() else None


def cache_dir() -> pathlib.Path:
    """Directory holding the built IRs.

    Defaults to ``~/.cache/ov_autoplace/zoo/``; ``$OV_AUTOPLACE_ZOO_DIR``
    overrides it.  A directory inside the repository is refused: the IRs
    together weigh over 600 MB and must never end up in a commit.
    """
    env = os.environ.get(ENV_VAR)
    path = pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "ov_autoplace" / "zoo"
    path = path.expanduser().resolve()
    if _REPO_ROOT is not None and (path == _REPO_ROOT or _REPO_ROOT in path.parents):
        raise ValueError(f"zoo cache dir {path} is inside the repository {_REPO_ROOT}; "
                         f"point ${ENV_VAR} somewhere else")
    return path


def graph_counts(model: ov.Model) -> tuple[int, int]:
    """``(nodes, edges)`` of an OpenVINO model.

    Nodes are all ops (Parameters, Constants and Results included); edges are
    the output->input connections, i.e. one per consumer of each output port.
    """
    ops = model.get_ordered_ops()
    edges = sum(len(out.get_target_inputs()) for op in ops for out in op.outputs())
    return len(ops), edges


# --------------------------------------------------------------------------
# Builders: each returns (torch module in eval mode, example_input, shapes),
# where shapes maps input name -> (static shape, openvino element type).
# --------------------------------------------------------------------------

def _vision(ctor: str, size: int, **kwargs: Any) -> tuple[Any, Any, dict]:
    torch = _import("torch")  # first, so a missing torch is named as such
    tv = _import("torchvision")
    torch.manual_seed(0)
    net = getattr(tv.models, ctor)(weights=None, **kwargs).eval()
    shape = (1, 3, size, size)
    return net, torch.randn(*shape), {"x": (shape, ov.Type.f32)}


def _inception_v3() -> tuple[Any, Any, dict]:
    # The aux classifier exists (as in the reference model) but is inactive in
    # eval mode, so it is not part of the traced graph.
    return _vision("inception_v3", 299, aux_logits=True, init_weights=True)


def _resnet50() -> tuple[Any, Any, dict]:
    return _vision("resnet50", 224)


def _bert_base() -> tuple[Any, Any, dict]:
    # Set before transformers is imported: it reads the flag at import time,
    # and any accidental hub access must fail fast instead of hanging.
    os.environ["HF_HUB_OFFLINE"] = "1"
    torch = _import("torch")
    transformers = _import("transformers")
    torch.manual_seed(0)
    # Default BertConfig is BERT-base (12 layers, hidden 768, 12 heads).  SDPA
    # attention is pinned (it is the current default) so a change of default in
    # transformers cannot silently change the graph: each layer then converts
    # to one ScaledDotProductAttention op.
    config = transformers.BertConfig(attn_implementation="sdpa")
    net = transformers.BertModel(config).eval()
    seq = (1, 128)
    # token_type_ids is left out: BertModel defaults it to zeros, which is what
    # single-segment inference feeds anyway.
    example = {
        "input_ids": torch.randint(0, config.vocab_size, seq, dtype=torch.int64),
        "attention_mask": torch.ones(seq, dtype=torch.int64),
    }
    return net, example, {name: (seq, ov.Type.i64) for name in example}


_BUILDERS: dict[str, Callable[[], tuple[Any, Any, dict]]] = {
    "inception_v3": _inception_v3,
    "resnet50": _resnet50,
    "bert_base": _bert_base,
}

# More architectures (detection, segmentation, decoder LLM block, speech, ...) share the table; see extra.py.
from ov_autoplace_lab.models.extra_models import EXTRA, EXTRA_BUILDERS  # noqa: E402

_BUILDERS.update(EXTRA_BUILDERS)
#: The models the project trains and benchmarks on: the zoo first, then the extra architectures.
ALL_MODELS = ZOO + EXTRA

# Architectures kept out of every training set (unseen_models.py): buildable, never in ALL_MODELS.
from ov_autoplace_lab.models.unseen_models import UNSEEN, UNSEEN_BUILDERS  # noqa: E402

_BUILDERS.update(UNSEEN_BUILDERS)

# The frozen held-out architectures (heldout_models.py, docs/heldout.md): buildable, in no list training reads.
from ov_autoplace_lab.models.heldout_models import (HELD_OUT_BLOCK_FINGERPRINTS, HELD_OUT_BUILDERS,  # noqa: E402,F401
                                                   HELD_OUT_FAMILIES, HELD_OUT_FINGERPRINTS)

_BUILDERS.update(HELD_OUT_BUILDERS)

# The second frozen held-out list (heldout2_models.py), added when the first was spent: buildable, read by nothing else.
from ov_autoplace_lab.models.heldout2_models import (HELD_OUT2_BLOCK_FINGERPRINTS, HELD_OUT2_BUILDERS,  # noqa: E402
                                                    HELD_OUT2_FAMILIES, HELD_OUT2_FINGERPRINTS)

_BUILDERS.update(HELD_OUT2_BUILDERS)

#: Every frozen held-out architecture, spent or not, and their fingerprints: what training, validation, selection
#: and target generation refuse (a spent list stays refused: its readings stay comparable with the policies after).
FROZEN_HELD_OUT = HELD_OUT_FAMILIES + HELD_OUT2_FAMILIES
FROZEN_FINGERPRINTS = {**HELD_OUT_FINGERPRINTS, **HELD_OUT2_FINGERPRINTS}
FROZEN_BLOCK_FINGERPRINTS = {**HELD_OUT_BLOCK_FINGERPRINTS, **HELD_OUT2_BLOCK_FINGERPRINTS}


def _convert(name: str) -> tuple[ov.Model, dict, list[str]]:
    """Build ``name`` in torch and convert it to a static-shape ov.Model: ``(model, input shapes, libraries)``, the
    libraries being those it was built with (openvino and torch, and torchvision / transformers where the network's
    modules come from them: what the sidecar records for :func:`_stale_versions`)."""
    net, example, shapes = _BUILDERS[name]()
    import torch  # present: the builder imported it

    libraries = sorted({"openvino", "torch"} | {lib for m in net.modules() for lib in ("torchvision", "transformers")
                                                if type(m).__module__.startswith(lib + ".")})

    # Passing the shapes as ``input`` (not only example_input) makes every
    # input static at conversion time, so shape sub-graphs get folded away
    # and the graph is the one the placer will see at inference.
    inputs = [(ov.PartialShape(list(shape)), etype) for shape, etype in shapes.values()]
    with torch.no_grad(), warnings.catch_warnings():
        # Tracing warns that torch.jit is deprecated and that some Python
        # conditions were frozen (expected for a static-shape trace), and
        # transformers warns about its own deprecated internals: none of it
        # is actionable for a zoo user.
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", message=r".*torch\.jit\.trace", category=FutureWarning)
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers\.")
        model = ov.convert_model(net, example_input=example, input=inputs)
    model.set_friendly_name(name)  # else "Model<N>", a process-wide counter
    if name == "bert_base":
        # Tracing names the first ModelOutput field only by a numeric tensor
        # id; give it its real name so callers can look it up.
        model.outputs[0].get_tensor().add_names({"last_hidden_state"})
    return model, {k: list(v[0]) for k, v in shapes.items()}, libraries


def _versions() -> dict[str, str | None]:
    import importlib.metadata as md
    out: dict[str, str | None] = {"openvino": ov.get_version()}
    for pkg in ("torch", "torchvision", "transformers"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    return out


def _stale_versions(sidecar: dict) -> dict[str, tuple]:
    """The libraries of a build whose version differs between its sidecar and this environment, as
    ``{name: (built, here)}``: the sidecar's ``libraries`` (every library, for a sidecar written before they were
    recorded); empty where this environment cannot build (no torch: what is cached is used)."""
    here = _versions()
    if here["torch"] is None:
        return {}
    built = sidecar.get("versions") or {}
    return {k: (built.get(k), here[k]) for k in sidecar.get("libraries", here)
            if here.get(k) is not None and built.get(k) != here[k]}


def build(name: str, *, force: bool = False) -> pathlib.Path:
    """Build model ``name`` as IR in :func:`cache_dir` and return the .xml path.

    An existing IR is reused unless ``force``, or unless this environment could build it and has other versions
    of the libraries it was built with than its sidecar records (then it is built again).  The IR is written into a
    temporary directory next to the target and moved in with ``os.replace``;
    the JSON sidecar goes last and is what marks the build complete, so an
    interrupted build is redone rather than leaving a half IR in use.
    """
    if name not in _BUILDERS:
        raise ValueError(f"unknown zoo model {name!r}; choose from "
                         f"{ALL_MODELS + UNSEEN + FROZEN_HELD_OUT}")
    out_dir = cache_dir()
    xml = out_dir / f"{name}.xml"
    meta = out_dir / f"{name}.json"
    if not force and xml.exists() and xml.with_suffix(".bin").exists() and meta.exists():
        stale = _stale_versions(json.loads(meta.read_text()))
        if not stale:
            log.debug("reusing %s", xml)
            return xml
        # One cache serves every environment of the project (the LLM venv pins an older transformers): an IR
        # built by other library versions is another graph (BERT-like towers lose or gain nodes), so it is built
        # again here rather than evaluated under this environment's name for it.
        log.info("rebuilding %s: built with %s", name,
                 ", ".join(f"{k} {old} (here {new})" for k, (old, new) in stale.items()))

    start = time.perf_counter()
    model, shapes, libraries = _convert(name)
    nodes, edges = graph_counts(model)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out_dir))
    try:
        ov.save_model(model, tmp / f"{name}.xml", compress_to_fp16=False)
        sidecar = {
            "name": name, "nodes": nodes, "edges": edges, "inputs": shapes,
            "versions": _versions(), "libraries": libraries, "build_seconds": round(time.perf_counter() - start, 2),
        }
        (tmp / f"{name}.json").write_text(json.dumps(sidecar, indent=2) + "\n")
        # The sidecar marks a complete build (see the reuse test above): drop
        # the old one first and move the new one in last, so a crash between
        # the renames means "rebuild", never an old .xml with a new .bin.
        meta.unlink(missing_ok=True)
        for suffix in (".bin", ".xml", ".json"):
            os.replace(tmp / f"{name}{suffix}", out_dir / f"{name}{suffix}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("built %s: %d nodes, %d edges in %.1fs -> %s", name, nodes, edges,
             time.perf_counter() - start, xml)
    return xml


def info(name: str) -> dict:
    """The JSON sidecar of a built model (building it if needed)."""
    build(name)
    return json.loads((cache_dir() / f"{name}.json").read_text())


def load(name: str, core: ov.Core | None = None) -> ov.Model:
    """Read model ``name`` from the cache, building it first if needed."""
    return (core or ov.Core()).read_model(build(name))
