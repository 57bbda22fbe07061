"""Where served models come from: a folder (or, with fsspec, any URL it opens)
holding ``ID.pt2`` packages or ``ID.so`` libraries with their side files."""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import RequestError

# Model IDs name files in the store: no separators, no leading dot, so an ID
# can never reach outside it.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")

# What travels with ID.so (model.py finds them beside the library).
_SO_SIDE_FILES = (".weights.blob", "_weights.blob", ".spec.json")


@dataclass(frozen=True)
class StoredModel:
    """A model ID resolved in the store: its main file and side files, as names
    the store understands (paths for a folder, URLs for fsspec)."""

    model_id: str
    main: str
    side_files: tuple[str, ...]


def check_model_id(model_id: str) -> str:
    if not isinstance(model_id, str) or not _ID.fullmatch(model_id) or ".." in model_id:
        raise RequestError(400, f"invalid model ID {model_id!r}: use letters, digits, '.', '_' "
                                "and '-' (at most 200, starting with a letter or digit)")
    return model_id


class ModelStore:
    """Resolves model IDs to files: ``ID.pt2`` first, else ``ID.so`` (its
    ``ID.weights.blob`` / ``ID_weights.blob`` and ``ID.spec.json`` beside it).

    ``root`` is a local folder, or a URL (``s3://bucket/models``,
    ``memory://...``) when :mod:`fsspec` is installed; remote files are copied
    into a temporary folder for the load and removed after it.
    """

    def __init__(self, root: str | Path) -> None:
        text = str(root)
        self._fs = None
        if "://" in text and not text.startswith("file://"):
            try:
                import fsspec
            except ImportError:
                raise ValueError(f"model store {text!r} is a URL; install fsspec to read it "
                                 "(without fsspec the store must be a local folder)") from None
            self._fs, self._root = fsspec.core.url_to_fs(text)
            self._root = self._root.rstrip("/")
            if not self._fs.isdir(self._root):
                raise ValueError(f"model store {text!r} is not a folder")
        else:
            path = Path(text.removeprefix("file://")).expanduser().resolve()
            if not path.is_dir():
                raise ValueError(f"model store '{path}' is not a folder")
            self._root = str(path)
        self.root = text

    def _join(self, name: str) -> str:
        return f"{self._root}/{name}"

    def _exists(self, name: str) -> bool:
        path = self._join(name)
        return self._fs.isfile(path) if self._fs is not None else Path(path).is_file()

    def resolve(self, model_id: str) -> StoredModel:
        """The files of ``model_id``; a :class:`RequestError` 400 for an
        invalid ID, 404 for one the store does not hold."""
        check_model_id(model_id)
        if self._exists(model_id + ".pt2"):
            return StoredModel(model_id, self._join(model_id + ".pt2"), ())
        if self._exists(model_id + ".so"):
            side = tuple(self._join(model_id + s) for s in _SO_SIDE_FILES
                         if self._exists(model_id + s))
            return StoredModel(model_id, self._join(model_id + ".so"), side)
        raise RequestError(404, f"model {model_id!r} is not in the store {self.root!r} "
                                f"(no {model_id}.pt2 or {model_id}.so)")

    def signature(self, stored: StoredModel) -> tuple:
        """Sizes and modification times of ``stored``'s files: changes when
        any of them is replaced."""
        out = []
        for name in (stored.main, *stored.side_files):
            if self._fs is not None:
                info = self._fs.info(name)
                out.append((info.get("size"), str(info.get("mtime", info.get("LastModified")))))
            else:
                st = Path(name).stat()
                out.append((st.st_size, st.st_mtime_ns))
        return tuple(out)

    def model_ids(self) -> list[str]:
        """Every ID the store holds, sorted."""
        if self._fs is not None:
            names = [p.rsplit("/", 1)[-1] for p in self._fs.ls(self._root, detail=False)]
        else:
            names = [p.name for p in Path(self._root).iterdir() if p.is_file()]
        ids = {n[:-len(ext)] for n in names for ext in (".pt2", ".so") if n.endswith(ext)}
        return sorted(i for i in ids if _ID.fullmatch(i))

    def local_copy(self, stored: StoredModel) -> tuple[Path, tempfile.TemporaryDirectory | None]:
        """A local path to load ``stored`` from, and the temporary folder
        holding it (to clean up after the load; None for a local store)."""
        if self._fs is None:
            return Path(stored.main), None
        tmp = tempfile.TemporaryDirectory(prefix="aotishim-serve-")
        try:
            for name in (stored.main, *stored.side_files):
                target = Path(tmp.name) / name.rsplit("/", 1)[-1]
                with self._fs.open(name, "rb") as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        except BaseException:
            tmp.cleanup()
            raise
        return Path(tmp.name) / stored.main.rsplit("/", 1)[-1], tmp
