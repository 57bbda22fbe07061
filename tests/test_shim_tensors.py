"""Tensor shims: creation, getters, views, clones and copies."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aotishim
from aotishim import shim


def test_empty_strided_getters():
    t = shim.empty_strided([3, 4], [1, 3], dtype="float64")
    assert shim.get(t, "sizes") == [3, 4]
    assert shim.get(t, "strides") == [1, 3]
    assert shim.get(t, "dim") == 2
    assert shim.get(t, "numel") == 12
    assert shim.get(t, "storage_offset") == 0
    assert shim.get(t, "storage_size") == 12 * 8
    assert shim.get(t, "dtype") == 7
    assert shim.get(t, "device_type") == 0
    assert shim.get(t, "device_index") == -1  # cpu tensors have no index, as in torch
    assert shim.get(t, "layout") == 0
    assert shim.get(t, "element_size") == 8
    assert shim.get(t, "is_contiguous") is False
    assert shim.get(t, "data_ptr") % 64 == 0  # aligned for vector kernels
    assert t.owns_storage


def test_empty_strided_gapped_strides_size_storage_to_fit():
    t = shim.empty_strided([2, 3], [8, 2], dtype="float32")
    # last element at 1*8 + 2*2 = 12 -> 13 elements
    assert shim.get(t, "storage_size") == 13 * 4


def test_zero_dim_and_empty_tensors():
    s = shim.empty_strided([], [], dtype="int64")
    assert shim.get(s, "dim") == 0 and shim.get(s, "numel") == 1
    assert shim.get(s, "sizes") == []
    e = shim.empty_strided([0, 5], dtype="float32")
    assert shim.get(e, "numel") == 0
    assert shim.to_numpy(e).shape == (0, 5)


def test_from_blob_borrows_at_offset():
    base = np.arange(20, dtype=np.float32)
    t = shim.from_blob(base.ctypes.data, [2, 3], [3, 1], storage_offset=4, dtype="float32")
    assert shim.get(t, "data_ptr") == base.ctypes.data + 4 * 4
    assert shim.get(t, "storage_offset") == 4
    assert not t.owns_storage
    np.testing.assert_array_equal(shim.to_numpy(t), base[4:10].reshape(2, 3))


def test_reinterpret_shares_storage_and_writes_through():
    base = shim.empty_strided([4, 6], dtype="float32")
    shim.copy_(base, shim.from_numpy(np.zeros((4, 6), np.float32)))
    view = shim.reinterpret_tensor(base, [2, 3], [6, 1], 9)
    assert shim.get(view, "data_ptr") == shim.get(base, "data_ptr") + 9 * 4
    shim.copy_(view, shim.from_numpy(np.ones((2, 3), np.float32) * 7))
    expected = np.zeros((4, 6), np.float32)
    expected.reshape(-1)[9:12] = 7
    expected.reshape(-1)[15:18] = 7
    np.testing.assert_array_equal(shim.to_numpy(base), expected)
    stats = aotishim.memory_stats()
    assert stats["scopes"][0]["owned_storages"] == 1  # one allocation behind both


def test_reinterpret_offset_counts_from_where_self_starts():
    """As torch's _reinterpret_tensor: the offset is added to self's storage
    offset. Generated code reinterprets a weight that lies inside a shared
    buffer (an RNN's flattened parameters on cuda) with offset 0; taking the
    offset as absolute read the buffer's first weight instead (silently wrong
    numbers; this test fails that way: storage offset 0, not 5)."""
    flat = np.arange(20, dtype=np.float32)
    base = shim.from_numpy(flat, copy=True)
    weight = shim.reinterpret_tensor(base, [3, 4], [4, 1], 5)
    assert shim.get(weight, "storage_offset") == 5
    transposed = shim.reinterpret_tensor(weight, [4, 3], [1, 4], 0)
    assert shim.get(transposed, "storage_offset") == 5
    np.testing.assert_array_equal(shim.to_numpy(transposed), flat[5:17].reshape(3, 4).T)
    shifted = shim.reinterpret_tensor(weight, [2], [1], 2)
    assert shim.get(shifted, "storage_offset") == 7
    np.testing.assert_array_equal(shim.to_numpy(shifted), flat[7:9])
    # Still bounded by the storage, counted from the storage's start.
    with pytest.raises(aotishim.ShimError, match="outside its storage"):
        shim.reinterpret_tensor(weight, [4], [1], 12)


def test_new_tensor_handle_and_assign_out_share_storage():
    a = shim.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3), copy=True)
    b = shim.new_tensor_handle(a)
    c = shim.assign_tensors_out(a)
    assert b.handle != a.handle != c.handle
    assert b.data_ptr == a.data_ptr == c.data_ptr
    shim.delete(a)
    np.testing.assert_array_equal(shim.to_numpy(b), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(shim.to_numpy(c), np.arange(6).reshape(2, 3))


def test_clone_and_clone_preserve_strides():
    src = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = shim.reinterpret_tensor(shim.from_numpy(src), [3, 2], [1, 6], 2)  # transposed view
    c = shim.clone(t)
    # torch's clone: dense in the view's dimension order (dim 0 innermost)
    assert c.strides == [1, 3] and c.owns_storage and c.data_ptr != t.data_ptr
    np.testing.assert_array_equal(shim.to_numpy(c), shim.to_numpy(t))
    p = shim.clone_preserve_strides(t)
    assert p.strides == [1, 6] and p.storage_offset == 0
    flat = src.reshape(-1)
    expected = np.array([[flat[2 + i + 6 * j] for j in range(2)] for i in range(3)])
    np.testing.assert_array_equal(shim.to_numpy(t), expected)
    np.testing.assert_array_equal(shim.to_numpy(p), expected)


@pytest.mark.parametrize(
    "src_dtype,dst_dtype",
    [("float32", "bfloat16"), ("float32", "float16"), ("float64", "float32"),
     ("int64", "int32"), ("int32", "float64"), ("float32", "int64"), ("bool", "float32"),
     ("bfloat16", "float32"), ("float16", "float64"), ("uint8", "int16")],
)
def test_copy_converts_dtypes_like_numpy(src_dtype, dst_dtype):
    rng = np.random.default_rng(0)
    values = (rng.standard_normal(50) * 300).astype(np.float64)
    from aotishim._dtypes import numpy_dtype

    if src_dtype in ("int64", "int32", "uint8"):
        values = np.abs(values)
    src_np = values.astype(numpy_dtype(src_dtype))
    dst = shim.empty_strided([50], dtype=dst_dtype)
    shim.copy_(dst, shim.from_numpy(src_np))
    expected = src_np.astype(numpy_dtype(dst_dtype))
    got = shim.to_numpy(dst)
    np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64))


def test_float_to_int_copy_of_values_int64_cannot_hold():
    # A C++ float -> integer conversion of these is undefined; the copy
    # defines them as INT64_MIN on every platform (x86's own result).
    special = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 2.0**63, -(2.0**63), -1.5, 7.9])
    for src_dtype in (np.float64, np.float32):
        dst = shim.empty_strided([special.size], dtype="int64")
        shim.copy_(dst, shim.from_numpy(special.astype(src_dtype)))
        lo = np.iinfo(np.int64).min
        assert shim.to_numpy(dst).tolist() == [lo, lo, lo, lo, lo, lo, lo, -1, 7]


def test_half_conversions_cover_special_values():
    special = np.array([0.0, -0.0, 1e-8, 6e-8, 3e-5, 65504.0, 65520.0, 1e6, -1e6, np.inf,
                        -np.inf, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 1.0009765625, 1.00048828125],
                       dtype=np.float32)
    for name, npd in (("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)):
        dst = shim.empty_strided([special.size], dtype=name)
        shim.copy_(dst, shim.from_numpy(special))
        got = shim.to_numpy(dst)
        with np.errstate(over="ignore"):
            expected = special.astype(npd)
        np.testing.assert_array_equal(got.view(np.uint16), expected.view(np.uint16))
    nan = shim.empty_strided([1], dtype="bfloat16")
    shim.copy_(nan, shim.from_numpy(np.array([np.nan], np.float32)))
    assert np.isnan(shim.to_numpy(nan).astype(np.float32)[0])


def test_copy_broadcasts_and_honours_strides():
    dst_np = np.zeros((3, 8), np.float32)
    dst = shim.reinterpret_tensor(shim.from_numpy(dst_np), [3, 2], [8, 2], 1)
    shim.copy_(dst, shim.from_numpy(np.array([5.0, 6.0], np.float32)))
    expected = np.zeros((3, 8), np.float32)
    expected[:, 1] = 5
    expected[:, 3] = 6
    np.testing.assert_array_equal(dst_np, expected)


def _view_strategy(data, sizes):
    """Strides (0 for broadcast, 1 for rows, gaps) and an offset for `sizes`."""
    strides = data.draw(st.lists(st.sampled_from([0, 1, 2, 3, 5, 9, 17]),
                                 min_size=len(sizes), max_size=len(sizes)))
    offset = data.draw(st.integers(0, 3))
    extent = offset + 1 + sum((n - 1) * s for n, s in zip(sizes, strides) if n > 0)
    return strides, offset, extent


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_same_dtype_copy_between_any_views_matches_numpy(data):
    """Same-dtype copies go row by row (one memmove per row with unit strides,
    one load and store per element otherwise), for every element size: a
    broadcast source (addmm's bias), gapped and offset views on both sides."""
    dtype = data.draw(st.sampled_from(["bool", "int16", "float32", "int64", "bfloat16",
                                       "float64"]))
    from aotishim._dtypes import numpy_dtype

    npd = numpy_dtype(dtype)
    ndim = data.draw(st.integers(1, 3))
    sizes = data.draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim))
    src_strides, src_off, src_extent = _view_strategy(data, sizes)
    # dst must not have two elements at one address: strides of a dense
    # layout in some order, then scaled (gaps) and offset.
    order = data.draw(st.permutations(range(ndim)))
    dst_strides, step = [0] * ndim, data.draw(st.integers(1, 2))
    for d in reversed(order):
        dst_strides[d] = step
        step *= max(sizes[d], 1) + data.draw(st.integers(0, 2))
    dst_off = data.draw(st.integers(0, 3))
    dst_extent = dst_off + 1 + sum((n - 1) * s for n, s in zip(sizes, dst_strides) if n > 0)

    src_buf = (np.arange(src_extent) % 251 + 1).astype(npd)
    dst_buf = np.zeros(dst_extent, dtype=npd)
    dst = shim.reinterpret_tensor(shim.from_numpy(dst_buf), sizes, dst_strides, dst_off)
    src = shim.reinterpret_tensor(shim.from_numpy(src_buf), sizes, src_strides, src_off)
    shim.copy_(dst, src)

    item = np.dtype(npd).itemsize
    want = np.zeros(dst_extent, dtype=npd)
    np.lib.stride_tricks.as_strided(want[dst_off:], sizes, [s * item for s in dst_strides])[...] = \
        np.lib.stride_tricks.as_strided(src_buf[src_off:], sizes, [s * item for s in src_strides])
    np.testing.assert_array_equal(dst_buf.view(np.uint8), want.view(np.uint8))


def test_copy_between_overlapping_views_uses_source_values():
    # Non-dense views (stride 2), so the copy is an element loop, not a
    # memmove that handles overlap by itself: dst = buf[2::2], src = buf[0:8:2].
    # Written in order without a snapshot of src, each element would read the
    # one written just before it (all zeros).
    buf = np.arange(10, dtype=np.float32)
    expected = buf.copy()
    expected[2:10:2] = buf[0:8:2].copy()
    base = shim.from_numpy(buf)
    dst = shim.reinterpret_tensor(base, [4], [2], 2)
    src = shim.reinterpret_tensor(base, [4], [2], 0)
    shim.copy_(dst, src)
    np.testing.assert_array_equal(buf, expected)
    np.testing.assert_array_equal(buf, np.array([0, 1, 0, 3, 2, 5, 4, 7, 6, 9], np.float32))


def test_from_numpy_copy_accepts_negative_strides():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for view in (a[::-1], a[:, ::-2], a[::-1, ::-1].T):
        with pytest.raises(shim.ShimError, match="negative or unaligned strides"):
            shim.from_numpy(view)  # borrowing cannot
        t = shim.from_numpy(view, copy=True)
        assert t.owns_storage and t.sizes == list(view.shape)
        np.testing.assert_array_equal(shim.to_numpy(t), view)
        t2 = shim.from_numpy(view, copy=True, device="sim")
        np.testing.assert_array_equal(shim.to_numpy(t2), view)


def test_from_numpy_non_contiguous_and_keepalive():
    import gc

    arr = np.arange(30, dtype=np.float64).reshape(5, 6)[::2, 1::2]
    t = shim.from_numpy(arr)
    assert t.strides == [12, 2]
    expected = arr.copy()
    view = shim.new_tensor_handle(t)
    del arr
    gc.collect()
    shim.delete(t)
    # The borrowed array stays alive while a view of its storage does.
    np.testing.assert_array_equal(shim.to_numpy(view), expected)


def test_copy_array_to_fresh_memory():
    arr = np.arange(6, dtype=np.int16).reshape(2, 3).T
    t = shim.from_numpy(arr, copy=True)
    assert t.owns_storage and t.strides == [2, 1]
    arr[...] = 0
    np.testing.assert_array_equal(shim.to_numpy(t), np.arange(6).reshape(2, 3).T)


def test_clone_keeps_a_dense_layout_like_torch():
    """aoti_torch_clone follows torch's clone(): a dense permuted tensor keeps
    its strides; one with gaps or overlaps becomes dense in its dimension
    order (here: row-major)."""
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    base = shim.from_numpy(src)
    transposed = shim.reinterpret_tensor(base, [4, 3], [1, 4], 0)
    c = shim.clone(transposed)
    assert c.strides == [1, 4] and c.owns_storage and c.storage_nbytes == 48
    np.testing.assert_array_equal(shim.to_numpy(c), src.T)
    gapped = shim.reinterpret_tensor(base, [3, 2], [4, 2], 0)
    assert shim.clone(gapped).strides == [2, 1]
    broadcast = shim.reinterpret_tensor(base, [2, 4], [0, 1], 0)
    assert shim.clone(broadcast).strides == [4, 1]
    np.testing.assert_array_equal(shim.to_numpy(shim.clone(broadcast)), np.stack([src[0]] * 2))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_clone_strides_are_torchs_for_any_view(data):
    """Generated code reads a clone (and attention's outputs, made the same
    way) with the strides torch's clone gives: for a view that is not dense
    (q sliced from a fused q/k/v projection, say) that is dense in the view's
    own dimension order, not contiguous."""
    torch = pytest.importorskip("torch")
    ndim = data.draw(st.integers(1, 4))
    sizes = data.draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    strides = data.draw(st.lists(st.integers(0, 40), min_size=ndim, max_size=ndim))
    offset = data.draw(st.integers(0, 3))
    extent = offset + 1 + sum((n - 1) * s for n, s in zip(sizes, strides) if n > 0)
    buf = np.arange(extent, dtype=np.float32)
    theirs = torch.from_numpy(buf).as_strided(sizes, strides, offset)
    ours = shim.clone(shim.reinterpret_tensor(shim.from_numpy(buf), sizes, strides, offset))
    assert ours.strides == list(theirs.clone().stride()), (sizes, strides)
    np.testing.assert_array_equal(shim.to_numpy(ours), theirs.numpy())
