"""DevicePlacer: one logit per (group, device), for any number of devices."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ov_autoplace_lab.hsdag_torch.layers.device_placer import DevicePlacer  # noqa: E402


def test_scores_each_pair_with_shared_weights():
    torch.manual_seed(0)
    placer = DevicePlacer(8, 3, 2, 16)
    groups = torch.randn(5, 8)
    devices = torch.randn(4, 3)
    pairs = torch.randn(5, 4, 2)
    logits = placer(groups, devices, pairs)
    assert logits.shape == (5, 4)
    # a device's logits do not depend on which other devices are listed
    assert torch.allclose(placer(groups, devices[[2, 0]], pairs[:, [2, 0]]), logits[:, [2, 0]], atol=1e-6)
    # the same as an MLP on the concatenation
    w = torch.cat([placer.lin_group.weight, placer.lin_device.weight, placer.lin_pair.weight], dim=1)
    cat = torch.cat([groups[:, None].expand(5, 4, 8), devices[None].expand(5, 4, 3), pairs], dim=-1)
    expected = placer.out(torch.relu(cat @ w.T + placer.lin_group.bias)).squeeze(-1)
    assert torch.allclose(logits, expected, atol=1e-5)
    assert "DevicePlacer(group=8, device=3, pair=2, graph=0, hidden=16)" == repr(placer)


def test_a_whole_graph_summary_joins_every_pair():
    torch.manual_seed(0)
    placer = DevicePlacer(8, 3, 2, 16, graph_channels=8)
    groups, devices, pairs = torch.randn(5, 8), torch.randn(4, 3), torch.randn(5, 4, 2)
    summary = groups.mean(0)
    logits = placer(groups, devices, pairs, summary)
    hidden = (placer.lin_group(groups)[:, None] + placer.lin_device(devices)[None] + placer.lin_pair(pairs)
              + placer.lin_graph(summary))
    assert torch.allclose(logits, placer.out(torch.relu(hidden)).squeeze(-1), atol=1e-6)
    with pytest.raises(ValueError, match="pass graph_x"):
        placer(groups, devices, pairs)
