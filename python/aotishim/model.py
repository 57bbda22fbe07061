"""Load and run AOTInductor-compiled models.

``aotishim.load(path)`` accepts the ``.so`` of a model compiled with
``aot_inductor.link_libtorch=False``, ``package_constants_in_so=False`` and
``package_constants_on_disk_format="binary_blob"`` (its weights blob beside
it), or a ``.pt2`` package from ``torch._inductor.aoti_compile_and_package``
that holds such a model. No torch is needed here.

Where the weights are found when ``weights`` is not given, for ``dir/NAME.so``:
``dir/NAME.weights.blob`` (what :func:`aotishim.export.compile` writes), then
``dir/NAME_weights.blob`` (AOTInductor's own ``<hash>.wrapper_weights.blob``).
An optional ``dir/NAME.spec.json`` (also written by ``export.compile``)
records the input names, dtypes and shapes, dynamic dimensions with their
ranges included (:mod:`aotishim.spec`), so mismatches are reported before
the model runs; without it the model's own input checks report them.
"""

from __future__ import annotations

import ctypes
import io
import re
import shutil
import stat
import tempfile
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Mapping, Sequence

import numpy as np

from . import _core
from ._dtypes import DTYPES, NUMPY_BY_CODE, NUMPY_CODES, dtype_code, dtype_name, numpy_dtype
from . import shim
from .shim import ShimError
from .spec import ModelSpec, ShapeError, SpecError, TensorSpec, read_spec

__all__ = ["Model", "DeviceTensor", "ModelError", "ModelInputError", "LeakWarning", "TensorSpec", "load",
           "spec_path", "PACKAGE_MODEL_DIR"]

# Where aoti_compile_and_package puts a model inside a .pt2 archive.
PACKAGE_MODEL_DIR = "data/aotinductor/model/"


class ModelError(ShimError):
    """A model could not be loaded or run (a :class:`aotishim.ShimError`)."""


class ModelInputError(ModelError, ValueError):
    """The inputs given to :meth:`Model.run` do not match the model."""


class LeakWarning(ResourceWarning):
    """A closed model's scope still held tensors (see :attr:`Model.leaks`)."""


def spec_path(so_path: str | Path) -> Path:
    """The spec file that belongs to a model ``.so``: ``NAME.spec.json`` beside it."""
    p = Path(so_path)
    return p.with_name(p.stem + ".spec.json")


def _read_spec(so_path: Path) -> ModelSpec | None:
    path = spec_path(so_path)
    if not path.is_file():
        return None
    try:
        return read_spec(path)
    except (SpecError, OSError) as e:  # SpecError names the field
        raise ModelError(f"model spec '{path}' is unreadable: {e}") from None


class Model:
    """A loaded model. Run it with :meth:`run` (or call it); close it with
    :meth:`close` or a ``with`` block. It owns a memory scope of its own: closing
    it deletes its container and frees exactly what it made, nothing of other
    models'."""

    def __init__(self, core: Any, source: Path, spec: ModelSpec | None = None) -> None:
        self._core = core
        self._source = source
        self._spec = spec
        input_specs = spec.inputs if spec is not None else None
        self._input_specs = input_specs
        self._output_specs = spec.outputs if spec is not None else None
        # Fixed once loaded: read from C++ here, not on every run.
        self._input_names = tuple(core.input_names)
        self._output_names = tuple(core.output_names)
        self._constant_names = tuple(core.constant_names)
        self._weights_label: str | None = None  # set for models loaded from packages
        if input_specs is not None and len(input_specs) != len(self._input_names):
            n = len(self._input_names)
            core.close()
            raise ModelError(f"model spec '{spec_path(core.path)}' lists {len(input_specs)} "
                             f"inputs but the model takes {n}")
        # What every run needs, worked out once: run's per-call cost is paid
        # on each of possibly thousands of calls a second.
        self._device = core.device
        self._labels = tuple(self._input_label(i) for i in range(len(self._input_names)))
        self._input_codes = (None if input_specs is None
                             else tuple(DTYPES.get(s.dtype) for s in input_specs))
        self._static_shapes = _static_shapes(spec)
        # Whether the model writes each input in place: True or False as the
        # spec records it, None (possibly) when there is no record.
        self._mutated = (tuple(s.mutated for s in input_specs) if input_specs is not None
                         else (None,) * len(self._input_names))
        kind, index = _core.parse_device(self._device)
        self._dl_want = {0: (_DL_CPU, 0), 1: (_DL_CUDA, index)}.get(kind)  # None: no DLPack

    # ---- running ----
    def run(self, *inputs: Any, outputs: str = "numpy") -> tuple[Any, ...]:
        """Run the model on numpy arrays or DLPack tensors.

        Each input is a numpy array (or anything ``np.asarray`` accepts), or
        an object exporting ``__dlpack__``/``__dlpack_device__`` (a torch
        tensor, a CuPy array) on the model's device, whose memory the model
        reads in place, without a copy (strided or offset views are packed on
        the device first). For a cuda model aotishim's stream is ordered after
        the producer's pending work (through DLPack's C exchange table's
        current stream for torch, else the producer's ``stream=``), the
        model runs on that stream, and the producer gets its memory back only
        once the work queued there has finished (a producer's allocator may
        otherwise hand it to a writer on another stream while the model still
        reads it). Host tensors given to a cuda model are copied to it, as
        numpy arrays are.

        ``outputs="numpy"`` (the default) returns numpy arrays (bfloat16 as
        ``ml_dtypes.bfloat16``); ``outputs="dlpack"`` returns
        :class:`DeviceTensor` objects that stay on the model's device and
        export ``__dlpack__``, so ``torch.from_dlpack(out)`` or
        ``np.from_dlpack(out)`` share their memory. ``None`` stands for an
        output the model leaves empty. Raises :class:`ModelInputError` for a
        wrong number, dtype, shape or device of inputs, :class:`ModelError`
        when the model fails. The GIL is released while the model runs.
        """
        if outputs not in ("numpy", "dlpack"):
            raise ValueError(f"outputs must be 'numpy' or 'dlpack', not {outputs!r}")
        core = self._open_core()
        if len(inputs) != len(self._input_names):
            raise ModelInputError(
                f"{self.name} takes {len(self._input_names)} input(s) "
                f"({self._describe_inputs()}), got {len(inputs)}")
        if outputs == "dlpack" or any(_is_dlpack_producer(a) for a in inputs):
            return self._run_exchange(core, inputs, outputs)
        packed_here: list[tuple[np.ndarray, np.ndarray]] = []
        prepared = []
        for i, a in enumerate(inputs):
            array, code = self._prepare(i, a, packed_here)
            prepared.append((array, code, self._writable(i, array)))
        if self._input_specs is not None:
            self._check_shapes([a.shape for a, _, _ in prepared])
        try:
            raw = core.run_host(prepared)
        except ShimError as e:
            if core.closed:
                raise ModelError(f"{self.name} is closed") from None
            raise ModelError(str(e)) from None
        for caller, packed in packed_here:
            np.copyto(caller, packed)
        return tuple(None if r is None else _to_numpy(*r) for r in raw)

    __call__ = run

    def run_tensors(self, *tensors: "shim.Tensor") -> tuple["shim.Tensor", ...]:
        """Run on shim tensors (:mod:`aotishim.shim`), which the model consumes.

        Returns one tensor per output, owned by the caller (its current scope)
        and valid after the model is closed; delete them with ``shim.delete``.
        """
        # Not refused here when closed: the runner consumes the inputs on
        # every path, a closed model's included, so none is left behind.
        core = self._core
        try:
            handles = core.run_handles([t.handle for t in tensors])
        except ShimError as e:
            if core.closed:
                raise ModelError(f"{self.name} is closed") from None
            raise ModelError(str(e)) from None
        return tuple(shim.Tensor(h) if h else None for h in handles)

    def _run_exchange(self, core: Any, inputs: Sequence[Any], outputs: str) -> tuple[Any, ...]:
        """Runs on tensor handles: DLPack inputs borrowed, numpy ones borrowed
        or copied as :meth:`run` does; outputs as DeviceTensors or numpy.
        Inputs the model may write that it runs on a packed copy of are
        copied back into the caller's tensor after a successful run."""
        handles: list[int] = []
        shapes: list[tuple[int, ...]] = []
        # (the caller's tensor, a second handle to the copy the model writes)
        write_back: list[tuple[int, int]] = []
        packed_here: list[tuple[np.ndarray, np.ndarray]] = []
        slots: list[int] = []
        results: list[Any] = []
        try:
            try:
                for i, value in enumerate(inputs):
                    handle, shape = self._input_handle(i, value, write_back, packed_here)
                    handles.append(handle)
                    shapes.append(shape)
                if self._input_specs is not None:
                    self._check_shapes(shapes)
            except BaseException:
                for h in handles:
                    _core.delete_tensor_object(h)
                raise
            try:
                slots = core.run_handles(handles)  # consumed, also on failure
                for caller, copy in write_back:
                    _core.copy_(caller, copy)
            except ShimError as e:
                if core.closed:
                    raise ModelError(f"{self.name} is closed") from None
                raise ModelError(str(e)) from None
            for caller, packed in packed_here:
                np.copyto(caller, packed)
            if outputs == "dlpack":
                for h in slots:
                    results.append(DeviceTensor(h) if h else None)
            else:
                for h in slots:
                    results.append(_to_numpy(*_core.download(h)) if h else None)
        finally:
            for h in slots:
                if h:
                    _core.delete_tensor_object(h)
            for caller, copy in write_back:
                _core.delete_tensor_object(caller)
                _core.delete_tensor_object(copy)
        return tuple(results)

    def _input_handle(self, index: int, value: Any, write_back: list[tuple[int, int]],
                      packed_here: list[tuple[np.ndarray, np.ndarray]]) -> tuple[int, tuple]:
        """A packed tensor handle on the model's device for input ``index``,
        and its shape. When the model may write the input and runs on a copy
        of it, (the caller's tensor, the copy) goes to ``write_back``."""
        device = self._device
        if _is_dlpack_producer(value):
            if _negated_lazily(value):
                raise ModelInputError(
                    f"{self._labels[index]} is a lazily negated view (torch's negative bit, "
                    "e.g. from imag(z.conj())), which DLPack exports without the negation; "
                    "pass x.resolve_neg()")
            if self._dl_want is not None:
                # A producer with DLPack's C exchange table (torch) hands its
                # tensor over without the Python protocol calls; on cuda the
                # model's stream is ordered after the producer's current one.
                try:
                    taken = _core.borrow_exchange_input(value, device)
                except _EXPORT_ERRORS as e:
                    raise ModelInputError(f"{self._labels[index]}: {e}") from None
                if taken is not None:
                    return self._checked(index, *taken, write_back)
            dl_type, dl_id = value.__dlpack_device__()
            if dl_type == _DL_CPU and device != "cpu":
                value = np.from_dlpack(value)  # host data for a device model: copied below
            else:
                want = self._dl_want if self._dl_want is not None else _dl_device(device)
                if (int(dl_type), int(dl_id)) != want:
                    raise ModelInputError(
                        f"{self._labels[index]} is on {_describe_dl_device(dl_type, dl_id)}, "
                        f"the model runs on {device}")
                try:
                    # A cuda producer orders its work before this thread's
                    # stream on the model's device, which the model runs on.
                    stream = _core.device_stream(device) if want[0] == _DL_CUDA else None
                    capsule = _export_capsule(value, stream)
                    borrowed = _core.borrow_dlpack_input(capsule, device)
                except _EXPORT_ERRORS as e:
                    raise ModelInputError(f"{self._labels[index]}: {e}") from None
                return self._checked(index, *borrowed, write_back)
        array, code = self._prepare(index, value, packed_here)
        writes = self._mutated[index] is not False and self._writes_back(index, array)
        if device == "cpu" and array.flags.writeable:
            handle = _core.borrow_array(array, code)
            if writes and not array.flags.c_contiguous:
                return self._packed_writing_back(handle, handle, write_back), array.shape
            return _core.packed(handle), array.shape
        # A read-only array, or one for another device: the model runs on a copy.
        handle = _core.copy_array(np.ascontiguousarray(array), code, device)
        if writes:
            try:
                caller = _core.borrow_array(array, code)
            except BaseException:
                _core.delete_tensor_object(handle)
                raise
            return self._packed_writing_back(handle, caller, write_back), array.shape
        return handle, array.shape

    def _checked(self, index: int, handle: int, code: int, shape: tuple,
                 packed: bool, write_back: list[tuple[int, int]]) -> tuple[int, tuple]:
        """A borrowed input's handle, its dtype checked and its layout packed
        (the handle deleted when either fails), and its shape. A packed copy
        of an input the model may write is noted in ``write_back``."""
        try:
            self._check_dtype(index, code)
            if packed:
                return handle, shape
            if self._mutated[index] is not False:
                info = _core.tensor_info(handle)
                if self._writes_back(index, None, info["sizes"], info["strides"]):
                    return self._packed_writing_back(handle, handle, write_back), shape
            return _core.packed(handle), shape
        except BaseException:
            if _core.is_live(handle):
                _core.delete_tensor_object(handle)
            raise

    @staticmethod
    def _packed_writing_back(handle: int, caller: int, write_back: list[tuple[int, int]]) -> int:
        """``handle`` packed (the model's input), with the caller's tensor
        (``caller``: ``handle`` itself, or another view of the caller's
        memory) and a second handle to the packed copy kept in
        ``write_back``, to copy the model's writes back after the run."""
        dst = _core.new_tensor_handle(caller) if caller == handle else caller
        try:
            packed = _core.packed(handle)
        except BaseException:
            _core.delete_tensor_object(dst)
            raise
        try:
            copy = _core.new_tensor_handle(packed)
        except BaseException:
            _core.delete_tensor_object(dst)
            _core.delete_tensor_object(packed)
            raise
        write_back.append((dst, copy))
        return packed

    def _check_dtype(self, index: int, code: int) -> None:
        codes = self._input_codes
        if codes is not None and code != codes[index]:
            expected = self._input_specs[index].dtype
            if dtype_name(code) != expected:
                raise ModelInputError(f"{self._labels[index]} has dtype {dtype_name(code)}, "
                                      f"the model expects {expected}")

    def _check_shapes(self, shapes: list[tuple[int, ...]]) -> None:
        """The spec's shape check; a plain comparison first when every
        dimension is static (then nothing else can fail)."""
        if shapes == self._static_shapes:
            return
        try:
            self._spec.check_shapes(shapes, self._labels)
        except ShapeError as e:
            raise ModelInputError(str(e)) from None

    def _writable(self, index: int, array: np.ndarray) -> bool:
        """run_host's ``writable`` for a prepared array: whether the model may
        write it (borrowed when packed on the cpu, else written back after
        the run). Inputs the model does not write are borrowed only where
        that saves a copy; read-only memory never is."""
        if self._mutated[index] is False:
            return self._device == "cpu" and array.flags.writeable and array.flags.c_contiguous
        return self._writes_back(index, array)

    def _writes_back(self, index: int, array: np.ndarray | None,
                     sizes: Sequence[int] = (), strides: Sequence[int] = ()) -> bool:
        """For an input the model writes in place (or may: no record says),
        whether the caller's memory is to receive the writes. An input known
        to be written must be writable memory with one element per address;
        one only possibly written gets the writes where it can take them and
        otherwise runs on a copy, its memory untouched; off the cpu it runs on
        a copy, as a device model's numpy inputs always have (writing each
        back would add a copy from the device to every run)."""
        if self._mutated[index] is None and self._device != "cpu":
            return False
        if array is not None:
            if not array.flags.writeable:
                if self._mutated[index]:
                    raise ModelInputError(
                        f"{self._labels[index]} is a read-only array, and the model writes "
                        "this input in place; pass a writable array (e.g. np.array(x)), "
                        "which receives the writes")
                return False
            sizes, strides = array.shape, array.strides
        if any(n > 1 and st == 0 for n, st in zip(sizes, strides)):
            if self._mutated[index]:
                raise ModelInputError(
                    f"{self._labels[index]} has elements that share memory (a stride of 0, "
                    "as from broadcasting), and the model writes this input in place; pass "
                    "a tensor with one element per address")
            return False
        return True

    def _prepare(self, index: int, value: Any,
                 packed_here: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, int]:
        """The numpy array to run input ``index`` on and its dtype code. An
        array packed here (a layout the runtime cannot describe) that the
        model may write goes to ``packed_here`` as (the caller's, the packed
        one), for the caller's to receive the writes after the run."""
        array = np.asarray(value)
        code = NUMPY_CODES.get(array.dtype)
        if code is None:  # not a supported dtype as such: dtype_code says why (or finds it)
            try:
                code = dtype_code(array.dtype)
            except ValueError as e:
                raise ModelInputError(f"{self._labels[index]}: {e}") from None
        self._check_dtype(index, code)
        # Strided inputs are copied into a packed tensor by the runtime; only
        # layouts it cannot describe (negative or unaligned strides) are packed
        # here (a C-contiguous array would come back from that as it is).
        if not array.flags.c_contiguous and any(s < 0 or s % array.itemsize
                                                for s in array.strides):
            packed = np.ascontiguousarray(array)
            if self._mutated[index] is not False and self._writes_back(index, array):
                packed_here.append((array, packed))
            array = packed
        return array, code

    def _input_label(self, index: int) -> str:
        """How messages name input ``index`` (built once, kept in ``_labels``)."""
        name = (self._input_specs[index].name if self._input_specs is not None
                else self._input_names[index])
        return f"input {index} ({name})"

    def _describe_inputs(self) -> str:
        if self._input_specs is not None:
            return ", ".join(s.describe() for s in self._input_specs)
        return ", ".join(self._input_names)

    # ---- lifetime ----
    def close(self) -> list[str]:
        """Delete the model's container, then free what its scope still holds.

        Returns the leftovers (leaks; empty for a well-behaved model) and warns
        with :class:`LeakWarning` when there are any. Idempotent. Runs started
        after close was called are refused (:class:`ModelError`: "... is
        closed"); close waits only for those already in flight, then returns
        (a second close waits for the first one's teardown and returns []).
        Refused (:class:`ModelError`, the model stays open) while views from
        :meth:`extract_constants_map` live, or models that borrowed them.
        """
        try:
            leaks = list(self._core.close())
        except ShimError as e:  # its constants are still viewed: it stays open
            raise ModelError(str(e)) from None
        if leaks:
            warnings.warn(f"{self.name} left {len(leaks)} tensor(s) behind: {leaks}",
                          LeakWarning, stacklevel=2)
        return leaks

    @property
    def closed(self) -> bool:
        return self._core.closed

    def __enter__(self) -> "Model":
        self._open_core()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # A Model owns its container: a copy would share it, and dropping the
    # copy (its __del__) would close the original. Nor can one be pickled.
    def __copy__(self) -> "Model":
        raise TypeError(f"{self.name} cannot be copied: it owns its loaded model; "
                        "load the file again for a second one")

    def __deepcopy__(self, memo: dict) -> "Model":
        raise TypeError(f"{self.name} cannot be copied: it owns its loaded model; "
                        "load the file again for a second one")

    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError(f"{self.name} cannot be pickled: it is a loaded library in this "
                        f"process; send its path ({self._source}) and load it there")

    def __del__(self) -> None:
        core = getattr(self, "_core", None)
        if core is not None and not core.closed:
            try:
                core.close()
            except ShimError as e:
                # Still viewed by another model: left loaded, as it must be.
                warnings.warn(str(e), LeakWarning, stacklevel=2)

    def _open_core(self) -> Any:
        if self._core.closed:
            raise ModelError(f"{self.name} is closed")
        return self._core

    # ---- description ----
    @property
    def name(self) -> str:
        """The file the model was loaded from (for messages)."""
        return f"model '{self._source.name}'"

    @property
    def path(self) -> Path:
        """What was passed to :func:`load` (a ``.so`` or ``.pt2``), as an
        absolute, canonical path: the file that was checked and loaded."""
        return self._source

    @property
    def weights_path(self) -> str:
        """The weights blob that was loaded ("" when the model has none); for a
        package, ``package.pt2!member``."""
        if self._weights_label is not None and self._core.weights_path:
            return self._weights_label
        return self._core.weights_path

    @property
    def device(self) -> str:
        return self._device

    @property
    def input_names(self) -> list[str]:
        """The compiled model's input names (as AOTInductor names them)."""
        return list(self._input_names)

    @property
    def output_names(self) -> list[str]:
        return list(self._output_names)

    @property
    def constant_names(self) -> list[str]:
        return list(self._constant_names)

    @property
    def input_specs(self) -> list[TensorSpec] | None:
        """Input names, dtypes and shapes from the model's spec file, if any."""
        return None if self._input_specs is None else list(self._input_specs)

    @property
    def output_specs(self) -> list[TensorSpec] | None:
        return None if self._output_specs is None else list(self._output_specs)

    @property
    def spec(self) -> ModelSpec | None:
        """The whole spec file (symbolic dimensions and their ranges), if any."""
        return self._spec

    @property
    def constants_blob_size(self) -> int:
        """Bytes of weights the model expects (0 when none or unknown)."""
        return self._core.constants_blob_size

    @property
    def constant_data_ptrs(self) -> list[int]:
        """Where each constant's data was placed when the model was loaded."""
        return list(self._core.constant_data_ptrs)

    @property
    def constants_address(self) -> int | None:
        """Start of the model's constants memory (the lowest constant address)."""
        ptrs = [p for p in self._core.constant_data_ptrs if p]
        return min(ptrs) if ptrs else None

    @property
    def scope(self) -> int:
        return self._core.scope

    @property
    def memory_stats(self) -> dict:
        """This model's scope in :func:`aotishim.memory_stats` (tensors, bytes, ...),
        with ``mapped_bytes``: the weights blob its constants borrow
        (``mmap_weights``), 0 without; after close, zeros."""
        for scope in _core.memory_stats()["scopes"]:
            if scope["id"] == self._core.scope:
                return dict(scope, mapped_bytes=self._core.mapped_weights_bytes)
        return {"id": self._core.scope, "name": "", "tensors": 0, "owned_storages": 0,
                "owned_bytes": 0, "borrowed_storages": 0, "mapped_bytes": 0}

    # ---- constants (torch's runner API) ----
    def get_constant_fqns(self) -> list[str]:
        """The FQNs (``"fc1.weight"``) :meth:`load_constants` takes and
        :meth:`extract_constants_map` returns, in the model's order."""
        core = self._open_core()
        try:
            return list(core.constant_fqns)
        except ShimError as e:  # a container that cannot name its constants
            raise ModelError(str(e)) from None

    def load_constants(self, mapping: Mapping[str, Any], *, check_full_update: bool = False,
                       user_managed: bool = False, use_inactive: bool = False) -> None:
        """Load constants by FQN from numpy arrays or DLPack tensors (torch).

        Each must have the constant's dtype and shape (and, for DLPack
        tensors, be on the model's device): :class:`ModelInputError` names
        the first that does not, an unknown FQN, or with ``check_full_update``
        the FQNs left out; a failed load changes nothing. The data is copied
        into the model's memory in the model's layout, unless
        ``user_managed``: then the model borrows the caller's memory (which
        must be writable and in the model's strides), and keeps it alive
        while it holds it. ``use_inactive`` loads the inactive buffer while
        runs go on with the active one; :meth:`swap_constant_buffer` then
        switches over. Loading the active buffer waits for the runs in
        flight and holds new ones back until it is done.
        """
        core = self._open_core()
        if not isinstance(mapping, Mapping):
            raise ModelInputError(f"{self.name}: load_constants takes a mapping of FQN to "
                                  f"array, got {type(mapping).__name__}")
        handles: dict[str, int] = {}
        try:
            for fqn, value in mapping.items():
                if not isinstance(fqn, str):
                    raise ModelInputError(f"{self.name}: constant names are strings, got {fqn!r}")
                handles[fqn] = self._constant_handle(fqn, value, user_managed)
            core.load_constants(handles, check_full_update, user_managed, use_inactive)
        except ModelError:
            raise
        except _core.ShimInputError as e:
            raise ModelInputError(str(e)) from None
        except ShimError as e:
            if core.closed:
                raise ModelError(f"{self.name} is closed") from None
            raise ModelError(str(e)) from None
        finally:
            for h in handles.values():
                _core.delete_tensor_object(h)

    def _constant_handle(self, fqn: str, value: Any, user_managed: bool) -> int:
        """A tensor handle over (or, for another device, a copy of) ``value``."""
        label = f"{self.name}: constant '{fqn}'"
        device = self._device
        if _is_dlpack_producer(value):
            dl_type, _ = value.__dlpack_device__()
            if not (dl_type == _DL_CPU and device != "cpu"):
                try:
                    capsule = _export_capsule(value, None)
                    return _core.borrow_dlpack(capsule, device)
                except _EXPORT_ERRORS as e:
                    raise ModelInputError(f"{label}: {e}") from None
            value = np.from_dlpack(value)  # host data for a device model: copied below
        array = np.asarray(value)
        try:
            code = dtype_code(array.dtype)
        except ValueError:
            raise ModelInputError(f"{label}: arrays of dtype {array.dtype} are not "
                                  "supported") from None
        if user_managed:
            if device != "cpu":
                raise ModelInputError(f"{label}: user_managed borrows memory on the model's "
                                      f"device ({device}); pass a DLPack tensor there")
            if not array.flags.writeable:
                raise ModelInputError(f"{label}: user_managed cannot borrow a read-only "
                                      "array (the model may write its buffers)")
            return _core.borrow_array(array, code)
        if device == "cpu" and array.flags.writeable:
            return _core.borrow_array(array, code)
        return _core.copy_array(np.ascontiguousarray(array), code, device)

    def extract_constants_map(self, use_inactive: bool = False) -> dict[str, Any]:
        """The model's constants by FQN, viewing its memory (no copy): numpy
        arrays for a cpu model, :class:`DeviceTensor` objects otherwise.
        While any of them (or a model that borrowed them with
        ``user_managed=True``) lives, :meth:`close` and
        :meth:`free_inactive_constant_buffer` (of that buffer) are refused.
        Empty for an inactive buffer that holds nothing."""
        core = self._open_core()
        try:
            handles = core.extract_constants_map(use_inactive)
        except ShimError as e:
            raise ModelError(str(e)) from None
        out: dict[str, Any] = {}
        try:
            for fqn, h in handles.items():
                tensor = DeviceTensor(h)
                out[fqn] = _host_view(tensor) if self._device == "cpu" else tensor
        finally:
            for h in handles.values():
                _core.delete_tensor_object(h)
        return out

    def swap_constant_buffer(self) -> None:
        """Make the inactive buffer active, between runs: each run sees
        either the old constants or the new ones, never a mix."""
        self._constants_call(self._open_core().swap_constant_buffer)

    def free_inactive_constant_buffer(self) -> None:
        """Free the inactive buffer (after a swap: the old constants)."""
        self._constants_call(self._open_core().free_inactive_constant_buffer)

    def _constants_call(self, fn: Any) -> None:
        try:
            fn()
        except _core.ShimInputError as e:
            raise ModelInputError(str(e)) from None
        except ShimError as e:
            raise ModelError(str(e)) from None

    @property
    def leaks(self) -> list[str]:
        """What :meth:`close` found left in the model's scope."""
        return list(self._core.leaks)

    @property
    def graphs(self) -> list[dict]:
        """For a model loaded with ``cuda_graphs=True``, one entry per input
        signature seen: ``inputs`` (e.g. ``"float32[1,3,224,224]"``),
        ``recorded`` (whether its runs replay a CUDA graph), ``reason`` (why
        not) and ``replays`` (calls served by the graph). Empty otherwise."""
        return list(self._core.graphs)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"device={self.device}"
        return (f"<aotishim.Model {self._source.name} inputs={self.input_names} "
                f"outputs={self.output_names} {state}>")


class DeviceTensor(_core.DeviceTensor):
    """A model output left on the model's device (``Model.run(...,
    outputs="dlpack")``), cpu included. It exports ``__dlpack__`` /
    ``__dlpack_device__``: ``torch.from_dlpack(t)``, ``np.from_dlpack(t)``
    or ``cupy.from_dlpack(t)`` share its memory, which lives until this
    object and every such consumer are gone. For cuda the consumer's
    ``stream=`` waits for the model's work; a consumer stream must still
    exist when the consumer drops the memory (aotishim orders its later
    work after that stream's before reusing it).
    """

    @property
    def dtype(self) -> str:
        return dtype_name(self.dtype_code)

    def __repr__(self) -> str:
        return (f"<aotishim.DeviceTensor {self.dtype}{list(self.shape)} on {self.device} "
                f"at {self.data_ptr:#x}>")


# DLPack device types (the spec's DLDeviceType) aotishim exchanges.
_DL_CPU, _DL_CUDA = 1, 2


def _is_dlpack_producer(value: Any) -> bool:
    """A non-numpy object speaking DLPack (numpy arrays keep numpy's path)."""
    return (not isinstance(value, (np.ndarray, np.generic))
            and hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"))


def _negated_lazily(value: Any) -> bool:
    """A torch view carrying the negative bit: its memory holds the values
    un-negated, and torch's DLPack export (protocol and C table alike) hands
    that memory over as it is, so reading it would give the wrong sign."""
    is_neg = getattr(value, "is_neg", None)
    return callable(is_neg) and bool(is_neg())


def _dl_device(device: str) -> tuple[int, int]:
    kind, index = _core.parse_device(device)
    if kind == 0:
        return (_DL_CPU, 0)
    if kind == 1:
        return (_DL_CUDA, index)
    raise ModelInputError(f"DLPack inputs are supported on cpu and cuda models, not {device}")


def _describe_dl_device(dl_type: int, dl_id: int) -> str:
    names = {_DL_CPU: "cpu", _DL_CUDA: f"cuda:{dl_id}", 3: "cuda pinned host memory",
             13: "cuda managed memory", 8: "metal"}
    return names.get(int(dl_type), f"DLPack device ({int(dl_type)}, {int(dl_id)})")


# What a producer's __dlpack__ or a refused borrow raise: a bad input, reported as one.
_EXPORT_ERRORS = (ShimError, ValueError, TypeError, BufferError, RuntimeError)


def _export_capsule(value: Any, stream: int | None) -> Any:
    """``value.__dlpack__`` in the newest protocol it speaks (1.x, else the
    unversioned one), ordered before ``stream`` when one is given."""
    kwargs = {} if stream is None else {"stream": stream}
    try:
        return value.__dlpack__(max_version=(1, 0), **kwargs)
    except TypeError:  # a producer older than DLPack 1.0 (no max_version)
        return value.__dlpack__(**kwargs)


def _to_numpy(data: np.ndarray, sizes: tuple[int, ...], code: int) -> np.ndarray:
    dtype = NUMPY_BY_CODE.get(code)
    return data.view(dtype if dtype is not None else numpy_dtype(code)).reshape(sizes)


def _host_view(tensor: "DeviceTensor") -> np.ndarray:
    """A writable numpy array over a host DeviceTensor's memory, which it
    keeps alive (through the buffer object it is made on)."""
    code = tensor.dtype_code
    dtype = NUMPY_BY_CODE.get(code)
    dtype = np.dtype(dtype if dtype is not None else numpy_dtype(code))
    shape = tuple(tensor.shape)
    strides = tuple(s * dtype.itemsize for s in tensor.strides)
    if not all(shape):
        return np.empty(shape, dtype)
    extent = dtype.itemsize + sum((n - 1) * s for n, s in zip(shape, strides))
    buffer = (ctypes.c_ubyte * extent).from_address(tensor.data_ptr)
    buffer.keepalive = tensor
    return np.ndarray(shape, dtype, buffer=buffer, strides=strides)


def _static_shapes(spec: ModelSpec | None) -> list[tuple[int, ...]] | None:
    """The input shapes of a spec whose every input dimension is a number,
    for which a match is all the full check could find (no symbol is bound,
    so relations are skipped, unless one has no symbols at all); None when
    the full check is needed."""
    if spec is None or spec.inputs is None or any(not r.expr.symbols for r in spec.relations):
        return None
    shapes = []
    for t in spec.inputs:
        if not all(type(d) is int for d in t.shape):
            return None
        shapes.append(tuple(t.shape))
    return shapes


# Magic numbers of the library formats a package may hold (ELF; Mach-O, thin and fat).
_LIBRARY_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")

# Bounds on extracting a .pt2, checked before anything is written: a member
# larger than RATIO_FREE_BYTES may expand at most MAX_EXPANSION_RATIO times
# its compressed size (compiled code and weights compress a few times, a
# crafted archive a thousand), and everything must fit in the free space of
# the destination. zipfile itself stops at each member's declared size and
# checks its CRC.
MAX_EXPANSION_RATIO = 100
RATIO_FREE_BYTES = 64 << 20
_SUPPORTED_COMPRESSION = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                          zipfile.ZIP_LZMA)


def _is_elf(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def _resolve_file(path: str | Path, what: str) -> Path:
    """``path`` made absolute and canonical (symlinks, ``..``, the current
    directory resolved), checked to be a regular file. The native loader
    matches libraries by the path string and searches the library path for a
    bare name; a canonical path names one file, the one checked here."""
    given = Path(path)
    try:
        resolved = given.resolve(strict=True)
        mode = resolved.stat().st_mode
    except FileNotFoundError:
        raise ModelError(f"no such {what}: '{given}' does not exist") from None
    except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop
        raise ModelError(f"cannot read {what} '{given}': {e}") from None
    if stat.S_ISDIR(mode):
        raise ModelError(f"{what} '{given}' is a directory, not a file")
    if not stat.S_ISREG(mode):
        raise ModelError(f"{what} '{given}' is not a regular file (a device, pipe or socket)")
    return resolved


# A model library in a package: <archive>/data/aotinductor/<model name>/<hash>.wrapper.so
# (torch names the model "model" unless it packages several).
_PACKAGE_LIBRARY = re.compile(r"(?:^|/)data/aotinductor/([^/]+)/[^/]+\.so$")


def _choose_model(names: list[str], model_name: str | None) -> str:
    """The library (one of ``names``, package paths) of the model to load."""
    by_model: dict[str, list[str]] = {}
    for n in names:
        match = _PACKAGE_LIBRARY.search(n)
        if match:
            by_model.setdefault(match.group(1), []).append(n)
    if not by_model:
        raise ModelError(
            "the package holds no compiled model library (expected "
            f"'<name>/{PACKAGE_MODEL_DIR}<hash>.wrapper.so'; was it compiled on this platform "
            "with aoti_compile_and_package?)")
    models = ", ".join(repr(m) for m in sorted(by_model))
    if model_name is None:
        if len(by_model) > 1:
            raise ModelError(f"the package holds several models ({models}); pass model_name= "
                             "to choose one")
        model_name = next(iter(by_model))
    elif model_name not in by_model:
        raise ModelError(f"the package holds no model {model_name!r} (its models: {models})")
    libraries = by_model[model_name]
    if len(libraries) > 1:
        raise ModelError(f"the package holds {len(libraries)} libraries for model "
                         f"{model_name!r} ({libraries}); extract the one to run and load its .so")
    return libraries[0]


def package_members(archive: zipfile.ZipFile,
                    model_name: str | None = None) -> tuple[str, str | None]:
    """The model ``.so`` in a ``.pt2`` archive and its weights blob (or None);
    ``model_name`` chooses among several models (required then)."""
    names = archive.namelist()
    so = _choose_model(names, model_name)
    blob = so[:-len(".so")] + "_weights.blob"
    return so, (blob if blob in names else None)


def _check_members(members: list[zipfile.ZipInfo], destination: Path) -> None:
    """Refuses, before anything is written, members that cannot be read or
    that would expand beyond the bounds above."""
    for info in members:
        if info.flag_bits & 0x1:
            raise ModelError(f"member '{info.filename}' is encrypted, which is not supported")
        if info.compress_type not in _SUPPORTED_COMPRESSION:
            raise ModelError(f"member '{info.filename}' uses compression method "
                             f"{info.compress_type}, which is not supported")
        if (info.file_size > RATIO_FREE_BYTES
                and info.file_size > MAX_EXPANSION_RATIO * max(info.compress_size, 1)):
            raise ModelError(
                f"member '{info.filename}' would expand from {info.compress_size} to "
                f"{info.file_size} bytes, more than {MAX_EXPANSION_RATIO} times; refusing to "
                "extract it")
    needed = sum(info.file_size for info in members)
    free = shutil.disk_usage(destination).free
    if needed > free:
        raise ModelError(f"extracting needs {needed} bytes but '{destination}' has {free} free")


def _copy_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path,
                 magic: tuple[bytes, ...] | None = None) -> None:
    try:
        with archive.open(info) as src, open(target, "wb") as dst:
            head = src.read(4)
            if magic is not None and head not in magic:
                raise ModelError(f"member '{info.filename}' is not a compiled library "
                                 f"(it starts with {head!r})")
            dst.write(head)
            shutil.copyfileobj(src, dst, 1 << 20)
    except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError,
            ValueError, OSError) as e:
        # A corrupt member (bad CRC, truncated stream) or a full disk.
        raise ModelError(f"member '{info.filename}' cannot be extracted: {e}") from None


def extract_package(archive: zipfile.ZipFile, so_path: Path,
                    blob_path: Path | None = None,
                    model_name: str | None = None) -> tuple[str, str | None]:
    """Writes the model ``.so`` of a ``.pt2`` archive to ``so_path`` and, when
    ``blob_path`` is given and the package has one, its weights blob there,
    and its extern-kernel nodes (the ops it calls through the proxy executor)
    beside ``so_path`` as ``<stem>.json`` when it has them. Returns the archive members (see :func:`package_members`). Raises
    :class:`ModelError` for a member that is encrypted, corrupt, compressed
    in an unsupported way, not a library, or that would expand beyond the
    limits (``MAX_EXPANSION_RATIO``, the destination's free space), checked
    before anything is written."""
    so_member, blob_member = package_members(archive, model_name)
    members = [archive.getinfo(so_member)]
    # The ops the model calls through the proxy executor (custom ops), which
    # the runtime reads from the .json beside the .so, as torch's runner does.
    nodes_member = so_member[:-len(".so")] + ".json"
    nodes = (archive.getinfo(nodes_member) if nodes_member in archive.namelist() else None)
    if nodes is not None:
        members.append(nodes)
    if blob_path is not None and blob_member is not None:
        members.append(archive.getinfo(blob_member))
    _check_members(members, Path(so_path).parent)
    _copy_member(archive, members[0], Path(so_path), _LIBRARY_MAGIC)
    nodes_path = Path(so_path).with_suffix(".json")
    if nodes is not None:
        _copy_member(archive, nodes, nodes_path)
    elif nodes_path.exists():
        nodes_path.unlink()  # a stale file of an earlier model at this path
    if blob_path is not None and blob_member is not None:
        _copy_member(archive, archive.getinfo(blob_member), Path(blob_path))
    return so_member, blob_member


def load(path: str | Path | bytes | BinaryIO, *, weights: str | Path | None = None,
         device: str = "cpu", cuda_graphs: bool = False, model_name: str | None = None,
         mmap_weights: bool = False) -> Model:
    """Load a compiled model for ``device`` ("cpu", "cuda:0", ...).

    ``path`` is a model ``.so`` (weights found beside it unless ``weights`` is
    given), a ``.pt2`` package holding one (a path, its ``bytes``, or a binary
    file object open on it), or a folder a package was extracted into (its
    library and weights are loaded where they lie, nothing is copied).
    ``model_name`` chooses a model of a package holding several (required
    then; the error lists their names). Paths are resolved to absolute,
    canonical ones first, so ``load("m.so")`` is ``./m.so``, never a library of
    that name elsewhere. Raises :class:`ModelError` with the reason: no such
    file, not a model, shims aotishim lacks (all named), missing or truncated
    weights, an invalid device, ``cuda_graphs`` off cuda.

    ``cuda_graphs=True`` (cuda models) records the run of each new input
    signature (dtypes, shapes, strides) as a CUDA graph on its first call and
    replays it on later ones, so the GPU runs the kernels back to back with
    no host work between them. Inputs are copied into the graph's own
    tensors and outputs are fresh copies (none shares memory with another);
    runs of the model are serialized. A run that cannot be recorded (one that
    waits for the GPU, as data-dependent output sizes do) runs as it would
    without; :attr:`Model.graphs` says which signatures were recorded and why
    not.

    ``mmap_weights=True`` (cpu models) lets the constants borrow the weights
    blob mapped copy-on-write instead of a copy of it: the weights take
    memory once, as file pages paged in by the runs that read them. The
    mapping lives as long as the model (or a view of its constants); keep
    the file unchanged meanwhile (see README "Weights"). A ``.pt2`` (a path,
    bytes, a file object) maps the blob extracted from it.
    """
    load_options = {"cuda_graphs": bool(cuda_graphs), "mmap_weights": bool(mmap_weights)}
    if weights is not None:
        weights = _resolve_file(weights, "weights file")
    if isinstance(path, (bytes, bytearray, memoryview)):
        return _load_archive(io.BytesIO(path), "<bytes>.pt2", weights, device, load_options,
                             model_name)
    if hasattr(path, "read"):
        label = f"<{getattr(path, 'name', 'file object')}>"
        try:
            # zipfile reads from the end: a stream that cannot seek is read whole.
            stream = path if path.seekable() else io.BytesIO(path.read())
        except (OSError, ValueError) as e:
            raise ModelError(f"cannot read the package from {label}: {e}") from None
        return _load_archive(stream, label, weights, device, load_options, model_name)
    if Path(path).is_dir():
        return _load_folder(Path(path), weights, device, load_options, model_name)
    source = _resolve_file(path, "model file")
    if zipfile.is_zipfile(source):
        return _load_archive(source, str(source), weights, device, load_options, model_name)
    if model_name is not None:
        raise ModelError(f"model_name applies to packages; '{source}' is a model library")
    if source.suffix not in (".so", ".dylib") and not _is_elf(source):
        raise ModelError(
            f"'{source}' is neither a compiled model library (.so built by AOTInductor with "
            "aot_inductor.link_libtorch=False) nor a .pt2 package")
    return _load_library(source, source, weights, device, load_options)


def _load_library(so: Path, source: Path, weights: str | Path | None, device: str,
                  options: dict | None = None) -> Model:
    spec = _read_spec(so)
    options = options or {}
    try:
        core = _core.Model.load(str(so), "" if weights is None else str(weights), device,
                                options.get("cuda_graphs", False),
                                options.get("mmap_weights", False))
    except ShimError as e:
        raise ModelError(str(e)) from None
    return Model(core, source, spec)


def _load_folder(folder: Path, weights: Path | None, device: str, options: dict,
                 model_name: str | None) -> Model:
    """A package extracted into ``folder``: its library loaded in place."""
    folder = folder.resolve()
    names = [p.relative_to(folder).as_posix() for p in folder.rglob("*.so")]
    try:
        member = _choose_model(names, model_name)
    except ModelError as e:
        raise ModelError(f"directory '{folder}' is not an extracted package: {e}") from None
    so = _resolve_file(folder / member, "model file")
    blob = so.with_name(so.stem + "_weights.blob")
    if weights is None and blob.is_file():
        weights = blob
    return _load_library(so, so, weights, device, options)


def _load_archive(package: Path | BinaryIO, label: str, weights: str | Path | None, device: str,
                  options: dict | None = None, model_name: str | None = None) -> Model:
    try:
        archive = zipfile.ZipFile(package)
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise ModelError(f"'{label}' is not a readable .pt2 package: {e}") from None
    # Extracted afresh each time: the runtime recognises a library it has
    # loaded before by its bytes and reuses it, so loading a package again
    # adds no code to the process; the files go once the model is loaded.
    with archive, tempfile.TemporaryDirectory(prefix="aotishim-pt2-") as tmp:
        tmp_dir = Path(tmp).resolve()
        so, blob = tmp_dir / "model.so", tmp_dir / "model.weights.blob"
        try:
            so_member, blob_member = extract_package(
                archive, so, blob if weights is None else None, model_name)
        except ModelError as e:
            raise ModelError(f"'{label}': {e}") from None
        try:
            # A mapped blob outlives its extracted file, which goes on return.
            model = _load_library(so, Path(label), weights, device, options)
        except ModelError as e:
            # Name the package, not files that are gone once this returns.
            message = str(e).replace(str(so), f"{label}!{so_member}")
            if blob_member is not None:
                message = message.replace(str(blob), f"{label}!{blob_member}")
            raise ModelError(message.replace(str(tmp_dir), f"{label}!")) from None
        if weights is None and blob_member is not None:
            model._weights_label = f"{label}!{blob_member}"
        return model
