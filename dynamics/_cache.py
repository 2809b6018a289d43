"""Where the compiled kernels are cached on disk, and when a cached kernel is stale.

numba caches a kernel beside its source file and keys the cache on that one file's
contents. A kernel compiled from ``a.py`` that calls a kernel of ``b.py`` carries ``b``'s
machine code in its own cache entry, so after an edit of ``b.py`` numba would serve the
kernel of ``a.py`` with the old code of ``b``. This module registers cache locators (numba's
:class:`numba.core.caching.CacheImpl` hook) for the kernels of this project's packages whose
freshness stamp is the SHA-256 of the kernel's source file *and of every module of this
project it imports, transitively* (read from the import statements). An edit of a file
recompiles every kernel that could call into it, and only those: an edit of the command
line recompiles nothing.

Where the cache lives, first that can be written to:

1. ``$NUMBA_CACHE_DIR`` if set (numba's own setting);
2. ``__pycache__`` beside the sources (an editable install, or a wheel installed in a
   virtual environment the user owns);
3. the user's cache directory (``~/.cache/numba``, numba's user-wide locator), for
   read-only installations;
4. otherwise a temporary directory for this process only, with a warning, removed when the
   process exits: the kernels are compiled again in the next process, but nothing fails.

The locators are registered when :mod:`dynamics` is imported, before any kernel is defined.
"""
from __future__ import annotations

import ast
import atexit
import functools
import hashlib
import os
import shutil
import tempfile
import warnings
from pathlib import Path

from numba.core import caching

PACKAGES = ("dynamics", "optdyn", "problems")
ROOT = Path(__file__).resolve().parent.parent  # the directory holding the packages


def _module_file(name: str) -> Path | None:
    """The source file of the project module ``name`` (dotted), or None if it is not ours."""
    parts = name.split(".")
    if parts[0] not in PACKAGES:
        return None
    base = ROOT.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=None)
def _imports(path: Path) -> frozenset[Path]:
    """The project's source files that ``path`` imports directly."""
    return frozenset(f for f in map(_module_file, _imported_names(path)) if f is not None)


def _imported_names(path: Path) -> list[str]:
    """The dotted names the import statements of ``path`` may bring in (modules, and the names
    imported from them, which may be submodules), memoised beside the file
    (``__pycache__/<name>.imports``, keyed by the file's digest; nothing is written where the
    directory cannot be): parsing every module took a quarter of a warm process's start."""
    digest = _file_digest(path).hex()
    memo = path.parent / "__pycache__" / f"{path.stem}.imports"
    try:
        lines = memo.read_text(encoding="utf-8").split("\n")
        if lines[0] == digest:
            return lines[1:]
    except (OSError, UnicodeDecodeError):
        pass
    names = _parsed_names(path)
    try:
        memo.parent.mkdir(exist_ok=True)
        partial = memo.with_name(f"{memo.name}.{os.getpid()}")
        partial.write_text("\n".join([digest, *names]), encoding="utf-8")
        os.replace(partial, memo)
    except OSError:
        pass
    return names


def _parsed_names(path: Path) -> list[str]:
    """:func:`_imported_names` read from the import statements of the parsed file."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.update([module] + [f"{module}.{alias.name}" for alias in node.names])
    return sorted(names)


@functools.lru_cache(maxsize=None)
def source_stamp(path: str) -> str:
    """SHA-256 of the file ``path`` and of every project file it imports, transitively."""
    seen, todo = set(), [Path(path).resolve()]
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo.extend(_imports(p) - seen)
    return hashlib.sha256(b"".join(map(_file_digest, sorted(seen)))).hexdigest()


@functools.lru_cache(maxsize=None)
def _file_digest(path: Path) -> bytes:
    return hashlib.sha256(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes()).digest()


def _ours(py_file: str) -> bool:
    try:
        return Path(py_file).resolve().relative_to(ROOT).parts[0] in PACKAGES
    except ValueError:
        return False


class _ProjectStamp:
    """The freshness stamp of :func:`source_stamp`, for the project's files only."""

    def get_source_stamp(self) -> str:
        return source_stamp(self._py_file)

    @classmethod
    def from_function(cls, py_func, py_file):
        return super().from_function(py_func, py_file) if _ours(py_file) else None


class UserDirLocator(_ProjectStamp, caching.UserProvidedCacheLocator):
    """``$NUMBA_CACHE_DIR``."""


class InTreeLocator(_ProjectStamp, caching.InTreeCacheLocator):
    """``__pycache__`` beside the sources."""


class UserWideLocator(_ProjectStamp, caching.UserWideCacheLocator):
    """The user's cache directory."""


class ProcessLocator(_ProjectStamp, caching.InTreeCacheLocator):
    """A temporary directory of this process, removed at its exit (no directory above can be
    written to)."""

    _path: str | None = None

    def __init__(self, py_func, py_file) -> None:
        super().__init__(py_func, py_file)
        if ProcessLocator._path is None:
            ProcessLocator._path = tempfile.mkdtemp(prefix="optdyn-kernels-")
            atexit.register(shutil.rmtree, ProcessLocator._path, ignore_errors=True)
            warnings.warn(f"optdyn: no writable directory for the kernel cache (tried $NUMBA_CACHE_DIR, "
                          f"{Path(py_file).parent / '__pycache__'} and the user's cache directory); compiled "
                          f"kernels are kept in {ProcessLocator._path} for this process only", RuntimeWarning,
                          stacklevel=2)
        self._cache_path = os.path.join(ProcessLocator._path, self.get_suitable_cache_subpath(py_file))


def register() -> None:
    """Put the project's locators before numba's own (idempotent)."""
    ours = [UserDirLocator, InTreeLocator, UserWideLocator, ProcessLocator]
    classes = caching.CacheImpl._locator_classes
    classes[:] = ours + [c for c in classes if c not in ours]


register()
