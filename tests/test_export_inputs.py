"""What export.compile accepts as example inputs and which device it compiles
for. Nothing here compiles a model: the checks run before torch.export."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from aotishim import export  # noqa: E402


class TwoInputs(torch.nn.Module):
    def forward(self, x, y):
        return x * 2 + y


def test_one_tensor_for_two_inputs_is_refused(tmp_path):
    """torch.export turns one example tensor passed for x and y into a
    program that reads only y (x has no users), so the model would silently
    ignore its first input. (Before the check the compile went ahead.)"""
    t = torch.randn(4, 8)
    with pytest.raises(ValueError, match="example inputs 0 and 1 share memory"):
        export.compile(TwoInputs(), (t, t), tmp_path, name="aliased")
    with pytest.raises(ValueError, match="example inputs 0 and 1 share memory"):
        export.compile_cached(TwoInputs(), (t,) * 2, tmp_path, name="aliased")
    with pytest.raises(ValueError, match="share memory"):  # views of one tensor too
        base = torch.randn(8, 8)
        export.compile(TwoInputs(), (base[:4], base[4:]), tmp_path, name="aliased")
    assert not list(tmp_path.glob("*.so"))


def test_aliasing_is_what_export_records():
    """Why the refusal: the exported program of (t, t) has an unused input."""
    t = torch.randn(4, 8)
    graph = torch.export.export(TwoInputs(), (t, t)).graph
    users = {n.name: len(n.users) for n in graph.nodes if n.op == "placeholder"}
    assert 0 in users.values(), users
    distinct = torch.export.export(TwoInputs(), (t, t.clone())).graph
    assert all(len(n.users) > 0 for n in distinct.nodes if n.op == "placeholder")


def test_compile_device_gets_an_index():
    """Tensors traced on the GPU report "cuda:0"; a program compiled for a
    bare "cuda" beside them failed torch's metadata checks ("Tensor device
    mismatch! Expected: cuda, Got: cuda:0", GPT-2 on torch 2.11)."""
    assert export._indexed_device("cuda") == "cuda:0"
    assert export._indexed_device("cuda:1") == "cuda:1"
    assert export._indexed_device("cpu") == "cpu"
    assert export._indexed_device("mps") == "mps"
