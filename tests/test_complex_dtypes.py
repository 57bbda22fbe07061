"""complex64/complex128 (and uint16..uint64) as tensor dtypes: creation,
getters, element sizes, copies and conversions on the cpu against torch's
copy_, numpy and DLPack exchange, and a compiled model that takes and returns
complex tensors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import aotishim
from aotishim import _core, export, shim

torch = pytest.importorskip("torch")

NEW_DTYPES = ["complex64", "complex128", "uint16", "uint32", "uint64"]
REAL_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
               "float16", "bfloat16", "float32", "float64"]


def _torch_values(dtype: torch.dtype, shape=(3, 5)) -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=g) * 40
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 40).to(dtype)
    hi = min(torch.iinfo(dtype).max, 2**40)
    lo = max(torch.iinfo(dtype).min, -(2**40))
    return torch.randint(lo, hi, shape, generator=g, dtype=torch.int64).to(dtype)


def _np(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


@pytest.mark.parametrize("name", NEW_DTYPES)
def test_tensor_getters_and_numpy_round_trip(name):
    t = _torch_values(getattr(torch, name))
    array = _np(t)
    h = shim.from_numpy(array, copy=True)
    assert shim.get(h, "dtype") == shim.constants()[f"dtype_{name}"]
    assert shim.get(h, "element_size") == getattr(torch, name).itemsize
    assert shim.get(h, "sizes") == [3, 5]
    assert shim.get(h, "storage_size") == 15 * getattr(torch, name).itemsize
    back = shim.to_numpy(h)
    assert back.dtype == array.dtype
    np.testing.assert_array_equal(back, array)


def test_complex_views_keep_both_parts():
    # A strided view of complex128 (16-byte elements) copies element-wise.
    base = (np.arange(24) + 1j * np.arange(24, 48)).astype(np.complex128).reshape(4, 6)
    h = shim.from_numpy(base)
    view = shim.reinterpret_tensor(h, [3, 2], [6, 3], 1)
    np.testing.assert_array_equal(shim.to_numpy(view), base.reshape(-1)[1:][:18].reshape(3, 6)[:, ::3])
    packed = shim.clone(view)
    assert shim.get(packed, "strides") == [2, 1]
    np.testing.assert_array_equal(shim.to_numpy(packed), shim.to_numpy(view))


@pytest.mark.parametrize("src_name", ["complex64", "complex128"] + REAL_DTYPES)
@pytest.mark.parametrize("dst_name", ["complex64", "complex128"])
def test_conversions_into_complex_match_torch(src_name, dst_name):
    src = _torch_values(getattr(torch, src_name))
    expected = torch.empty(src.shape, dtype=getattr(torch, dst_name)).copy_(src)
    dst = shim.empty_strided([3, 5], None, dtype=dst_name)
    shim.copy_(dst, shim.from_numpy(_np(src)))
    np.testing.assert_array_equal(shim.to_numpy(dst), expected.numpy())


@pytest.mark.parametrize("dst_name", REAL_DTYPES)
@pytest.mark.parametrize("src_name", ["complex64", "complex128"])
def test_conversions_out_of_complex_match_torch(src_name, dst_name):
    src = _torch_values(getattr(torch, src_name))
    src[0, 0] = complex(0, 3)  # real part 0: false as a real, true as bool
    src[0, 1] = 0
    with warnings.catch_warnings():  # "discards the imaginary part", once per process
        warnings.simplefilter("ignore")
        expected = torch.empty(src.shape, dtype=getattr(torch, dst_name)).copy_(src)
    dst = shim.empty_strided([3, 5], None, dtype=dst_name)
    shim.copy_(dst, shim.from_numpy(_np(src)))
    np.testing.assert_array_equal(shim.to_numpy(dst), _np(expected))


@pytest.mark.parametrize("src_name", ["uint64", "int64", "float64", "uint32"])
@pytest.mark.parametrize("dst_name", ["uint16", "uint32", "uint64", "int64", "float64", "float32"])
def test_unsigned_conversions_match_torch(src_name, dst_name):
    if src_name == "float64":
        src = torch.tensor([0.0, 1.5, 65535.9, 4294967296.0, 1.8e19, 123456.0])
        src = src.to(torch.float64)
        if dst_name in ("uint16", "uint32"):  # out of range there: C++ and torch are undefined
            src = src[src < 2.0 ** (16 if dst_name == "uint16" else 32)]
    elif src_name == "uint64":
        src = torch.tensor([0, 1, 2**40 + 3, 2**63 + 12345, 2**64 - 1, 65536],
                           dtype=torch.uint64)
    else:
        src = _torch_values(torch.int64, (6,)).abs().to(getattr(torch, src_name))
    expected = torch.empty(src.shape, dtype=getattr(torch, dst_name)).copy_(src)
    dst = shim.empty_strided(list(src.shape), None, dtype=dst_name)
    shim.copy_(dst, shim.from_numpy(src.numpy()))
    np.testing.assert_array_equal(shim.to_numpy(dst), expected.numpy())


@pytest.mark.parametrize("name", ["complex64", "complex128", "uint16", "uint64"])
def test_dlpack_in_and_out(name):
    t = _torch_values(getattr(torch, name))[:, 1::2]  # strided: borrowed as it lies
    h = _core.borrow_dlpack(t.__dlpack__(), "cpu")
    try:
        info = _core.tensor_info(h)
        assert info["data_ptr"] == t.data_ptr()
        assert info["dtype"] == shim.constants()[f"dtype_{name}"]
        assert info["strides"] == list(t.stride())
    finally:
        shim.delete(h)


class ComplexScale(torch.nn.Module):
    """Complex in, complex out, through real arithmetic on view_as_real."""

    def forward(self, z):
        r = torch.view_as_real(z)
        return torch.view_as_complex((r * 2 + 1).contiguous()), z.real.sum()


@pytest.fixture(scope="module")
def complex_model(model_cache):
    args = (torch.randn(4, 6, dtype=torch.complex64),)
    so = export.compile_cached(ComplexScale(), args, model_cache, name="complex_scale")
    with aotishim.load(so) as model:
        yield model


def test_model_takes_and_returns_complex_numpy(complex_model):
    z = (np.random.default_rng(3).standard_normal((4, 6, 2))).astype(np.float32)
    z = z.view(np.complex64)[..., 0]
    out, total = complex_model.run(z)
    want, want_total = ComplexScale()(torch.from_numpy(z))
    assert out.dtype == np.complex64 and out.shape == (4, 6)
    np.testing.assert_allclose(out, want.numpy(), rtol=1e-6)
    np.testing.assert_allclose(total, want_total.numpy(), rtol=1e-5)
    specs = complex_model.spec.inputs
    assert specs[0].dtype == "complex64"


def test_model_complex_dlpack_outputs(complex_model):
    z = torch.randn(4, 6, dtype=torch.complex64)
    out, _ = complex_model.run(z, outputs="dlpack")
    got = torch.from_dlpack(out)
    assert got.dtype == torch.complex64
    torch.testing.assert_close(got, ComplexScale()(z)[0], rtol=1e-6, atol=1e-6)


def test_model_refuses_the_wrong_complex_width(complex_model):
    z = np.zeros((4, 6), dtype=np.complex128)
    with pytest.raises(aotishim.ModelInputError, match="complex"):
        complex_model.run(z)


@pytest.mark.parametrize("name", ["complex32", "float8_e5m2", "float8_e4m3fn", "float4_e2m1fn_x2"])
def test_dtypes_torch_numbers_but_tensors_cannot_have_are_refused(name):
    code = shim.constants()[f"dtype_{name}"]
    assert _core.element_size(code) == getattr(torch, name).itemsize
    with pytest.raises(aotishim.ShimError, match=f"unsupported dtype {code}"):
        shim.empty_strided([2], None, dtype=code)
