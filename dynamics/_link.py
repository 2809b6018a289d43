"""Large kernels called by symbol instead of copied into every caller.

numba links into each compiled function a copy of the LLVM module of every function it calls,
then optimises the whole module again and generates its machine code (``CPUCodeLibrary.finalize``).
A kernel called from ten others is thus optimised and generated eleven times, and a pass three
calls deep once more at every level above it: the README's main job generated 549 thousand LLVM
instructions of final modules for 148 thousand of distinct functions.

LLVM inlines only small functions, so a large callee's copy buys the caller nothing but its
compilation. Here a caller that is one of this project's kernels does not link a callee that is
one too (cached, importable by name) when the callee's function holds more than
:data:`INLINE_LIMIT` LLVM instructions: the caller's module keeps the callee's declaration, which
the JIT resolves to the callee's machine code, already loaded in the process (numba loads a
callee before compiling its callers). The small callees, which LLVM does inline, are linked as
before.

Only code compiled for one of the project's kernels (the kernel itself, and the overload
implementations and closures numba compiles while typing it) calls by symbol. A caller resolved
this way needs its callees' code in the process before its own is loaded. Its entry in the
disk cache records them (module, name, argument types and symbol): loading the entry
first loads (or compiles) each of them, and treats the entry as missing — the caller is compiled
again — when one cannot be had under the symbol the caller was compiled against (numba names a
function's symbol with a counter of the process that compiled it, so a callee compiled again
elsewhere has another). The JIT is never asked to resolve a symbol that is not loaded.

The entry also records every kernel specialisation the code calls, linked or by symbol
(:attr:`Library.kernels`): what a workload compiles on an empty cache can be counted in a
process that only loads it (:func:`dynamics._compile.specialisations`).
"""
from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from numba.core import caching
from numba.core.codegen import JITCodeLibrary, require_global_compiler_lock
from numba.core.registry import cpu_target

INLINE_LIMIT = 300
"""LLVM instructions above which a callee kernel is called by symbol rather than linked. Below
some 200 the small helpers LLVM inlines into hot loops become calls (DDP 27 % slower on a
reach); from 300 to 1000 the kernels run as fast (within 5 %) and compile some 7–10 % faster
at 300, more callers sharing the code of the passes (measured on 2026-11-30)."""

_compiling = threading.local()
_kernels: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # library -> _Specialisation
_sizes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # library -> its function's LLVM instructions


class _Specialisation(NamedTuple):
    """A kernel's specialisation whose code is a library: its kernel, argument types, and
    whether its callers may call it by symbol (cached, and importable by name)."""
    kernel: object
    args: tuple
    by_symbol: bool


@contextmanager
def compiling(kernel) -> Iterator[None]:
    """The block in which ``kernel`` compiles (or loads) a specialisation: the code numba
    compiles for it meanwhile may call callees by symbol."""
    stack = _compiling.__dict__.setdefault("stack", [])
    stack.append(kernel)
    try:
        yield
    finally:
        stack.pop()


def register(kernel, args: tuple) -> None:
    """Note the specialisation ``args`` of ``kernel`` (compiled or loaded), for its callers'
    :attr:`Library.kernels` and, where its callers can find it again by name in another
    process, for their calls by symbol."""
    cres = kernel.overloads.get(args)
    if cres is not None and cres.library not in _kernels:
        module, qualname = kernel.py_func.__module__, kernel.py_func.__qualname__
        by_symbol = isinstance(kernel._cache, Cache) and kernel._can_compile and _named(module, qualname) is kernel
        _kernels[cres.library] = _Specialisation(kernel, args, by_symbol)


def _symbol(kernel, args: tuple) -> str:
    """The symbol of the specialisation ``args`` of ``kernel`` in this process."""
    return kernel.overloads[args].fndesc.llvm_func_name


def _large(library, symbol: str) -> bool:
    """Whether the function ``symbol`` of ``library`` holds more than :data:`INLINE_LIMIT`
    LLVM instructions (counted once, when a caller first links it)."""
    if library not in _sizes:
        function = library._get_module_for_linking().get_function(symbol)
        _sizes[library] = sum(1 for block in function.blocks for _ in block.instructions)
    return _sizes[library] > INLINE_LIMIT


def _named(module: str, qualname: str):
    """The object ``module.qualname``, or None."""
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found


class Library(JITCodeLibrary):
    """numba's JIT code library, linking large callee kernels by symbol (module docstring)."""

    symbol_callees: set = frozenset()
    """The kernels' specialisations this code calls by symbol, its linked callees' included:
    (module, name, argument types, symbol)."""

    kernels: set = frozenset()
    """Every kernel specialisation this code calls, directly or not, linked or by symbol:
    (dotted name, argument types). Kept in the disk cache, so that what a workload compiles on
    an empty cache can be counted on a warm one (:func:`dynamics._compile.specialisations`)."""

    @property
    def has_dynamic_globals(self) -> bool:
        """numba's test of code it cannot cache, true also for code calling kernels by symbol
        unless :class:`Cache` saves it: numba's own cache would not load the callees first (a
        user's cached function that calls such a kernel is compiled in each process, with
        numba's warning that it cannot be cached)."""
        return super().has_dynamic_globals or bool(self.symbol_callees) and not getattr(_compiling, "saving", False)

    def finalize(self) -> None:
        """numba's: link the callees' modules into this one, optimise it and load its machine
        code; but a large callee kernel stays a declaration where a kernel is compiling
        (module docstring), and the kernels called are recorded."""
        require_global_compiler_lock()
        self._codegen._check_llvm_bugs()
        self._raise_if_finalized()
        ours = bool(getattr(_compiling, "stack", None))
        self.symbol_callees, self.kernels = set(), set()
        seen = set()
        for library in self._linking_libraries:
            if library in seen:
                continue
            seen.add(library)
            self._reload_init.update(library._reload_init)
            self.kernels |= getattr(library, "kernels", set())
            callee = _kernels.get(library)
            if callee is not None:
                self.kernels.add((callee.kernel.name, callee.args))
                symbol = ours and callee.by_symbol and _symbol(callee.kernel, callee.args)
                if symbol and _large(library, symbol):
                    py_func = callee.kernel.py_func
                    self.symbol_callees.add((py_func.__module__, py_func.__qualname__, callee.args, symbol))
                    continue
            self.symbol_callees |= getattr(library, "symbol_callees", set())
            self._final_module.link_in(library._get_module_for_linking(), preserve=True)
        self._optimize_final_module()
        self._final_module.verify()
        self._finalize_final_module()


def _load(callees) -> bool:
    """Load (or compile) each callee; False unless every one is in the process under the symbol
    recorded."""
    for module, qualname, args, symbol in callees:
        try:
            __import__(module)
            kernel = _named(module, qualname)
            kernel.compile(args)
            if _symbol(kernel, args) != symbol:
                return False
        except Exception:  # any failure to get the callee makes the entry unusable: compile the caller
            return False
    return True


class _Impl(caching.CompileResultCacheImpl):
    """numba's cache of compile results, with the callees each result calls by symbol."""

    def check_cachable(self, cres) -> bool:
        _compiling.saving = True
        try:
            return super().check_cachable(cres)
        finally:
            _compiling.saving = False

    def reduce(self, cres):
        library = cres.library
        return "callees", sorted(library.symbol_callees, key=repr), sorted(library.kernels, key=repr), \
            super().reduce(cres)

    def rebuild(self, target_context, payload):
        if len(payload) != 4 or payload[0] != "callees" or not _load(payload[1]):
            return None
        cres = super().rebuild(target_context, payload[3])
        cres.library.symbol_callees, cres.library.kernels = set(payload[1]), set(payload[2])
        return cres


class Cache(caching.FunctionCache):
    """numba's function cache with :class:`_Impl`."""

    _impl_class = _Impl


def install() -> None:
    """Make numba's CPU code generator create :class:`Library` objects; called once the CPU
    name is chosen (creating the generator fixes it)."""
    cpu_target.target_context.codegen()._library_class = Library
