"""How the kernels are compiled: one specialisation per argument type, with or without
numba's reference counting.

Every kernel is numba-compiled and cached on disk (:mod:`dynamics._cache` says where, and
when an entry is stale). Those that return fresh arrays use ``njit(cache=True)`` — this
module's :func:`njit`, numba's with one difference: a kernel called from another compiled
function with a constant argument (``f(x, 0)``) is compiled for the argument's type
(int64), not for the constant (numba's ``Literal[int](0)``, a specialisation per value).
numba's own dispatcher compiled, for instance, the interval's workspace
(``interval_work``) once for ``order=0`` and again for ``order=1``, which only size its
arrays: each specialisation re-optimises and re-generates every kernel it calls, so the
README's main job spent a fifth of its cold start on such duplicates. The exception is an
argument a kernel names in ``literal``: a flag whose value decides whole branches (the
derivative order of the Runge–Kutta interval: at order 0 it is the forward dynamics alone)
is compiled per value. numba does not prune branches on a literal integer (only on None):
every branch is typed and lowered, and LLVM removes the dead ones, so the code runs as if
pruned, but every kernel a branch calls is compiled. A call that only higher orders make
goes through :func:`at_order`, which settles it while typing: a kernel compiled for order
0 or 1 then never compiles, say, the second-order tensors.

The passes that only read their inputs and write into arrays of a workspace use
:func:`allocation_free`: they are compiled without numba's runtime (NRT).

Why: numba counts references to every array a compiled function receives, copies, or
unpacks from a tuple (a workspace is a tuple of some twenty arrays), with atomic
increments and decrements that its pruning pass cannot remove across loops and branches.
In the first-order passes on a 6-DoF arm they took about a third of the time. A function
that allocates nothing needs none of them: every array it touches is owned by a caller
that outlives the call.

The rules, and who checks them:

- it allocates nothing (numba refuses to compile an allocation without NRT);
- it raises only exceptions with constant messages (numba: same);
- it never returns one of its array arguments, whose reference the caller would then
  release without having been given it (numba does not check this; a test of ours reads
  the sources for it);
- a function it calls that needs NRT (one that raises a message built at run time, or
  allocates and frees its own arrays) is compiled with ``njit(cache=True, _nrt=True)``:
  numba compiles callees with the caller's setting unless they set their own.

The single-state functions of the public API call an :func:`entry_point`: an
allocation-free kernel that writes into arrays the caller allocated and checks its
arguments' sizes and values itself. Python hands it the user's arrays untouched; numba's
dispatcher checks their types (in C) and, as compilation is disabled at call time, raises
TypeError for any other type instead of compiling for it. Only then, or when the kernel
raises ValueError, does the caller convert and check the arguments in Python (naming the
bad one) and call again through :func:`call_checked`, which compiles the kernel (or loads
it from the cache) for the converted types. The checks in Python cost more than the
algorithm on a 6-DoF arm; this way a call with well-formed arrays skips them.
:func:`dynamics.workspace.call_on_configuration` and :func:`dynamics.workspace.call_on_state`
are that fast path and its fallback for the two argument lists of the entry points.

What LLVM tunes the code for: numba generates code for the host's instruction set and, by
default, with LLVM's tuning model of the host's processor (its scheduling and cost tables).
On x86-64 this module sets numba's CPU name to the psABI level ``x86-64-v3`` (AVX2, FMA)
when the host implements it and the user has not chosen one (``NUMBA_CPU_NAME``): the
instruction set stays the host's (numba's CPU features are still the host's, AVX-512
included), only the tuning model changes. On an AMD EPYC (LLVM's ``znver5``) the main job's
kernels then compile in 10 % less CPU time and run as fast (0.95–1.04× over the solvers,
interval kernels and contact functions; BENCHMARKS.md, "cold start"). The numba cache keys
its entries by the CPU name, so a cache made before this choice is compiled again once.
The name is also put in the environment (``NUMBA_CPU_NAME``, where unset): numba reads every
``NUMBA_`` variable again whenever one of them changes (a script that sets
``NUMBA_NUM_THREADS`` after importing the library, say), which dropped the name, so that every
kernel compiled after that was keyed for the host's name and compiled again in each process
(measured: a script that set ``NUMBA_NRT_STATS`` after the import compiled the forward pass of
Solo-12's trot, 7.3 s, at every run).

How a kernel calls another: numba copies each callee's code into its caller; a callee too
large for LLVM to inline is called by symbol instead (:mod:`dynamics._link`), which the
kernels' disk cache (:meth:`Kernel.enable_caching`) supports.
"""
from __future__ import annotations

import hashlib
import inspect
import os
import platform
from contextlib import contextmanager

from llvmlite import ir
from numba.core import cgutils, imputils, sigutils, types
from numba.core import config as numba_config
from numba.core.codegen import get_host_cpu_features
from numba.core.compiler_lock import global_compiler_lock
from numba.core.datamodel import models, register_default
from numba.core.registry import CPUDispatcher
from numba.core.runtime.nrtdynmod import _meminfo_struct_type
from numba.core.typing.templates import AttributeTemplate, infer_getattr
from numba.extending import NativeValue, box, intrinsic, lower_getattr_generic, typeof_impl, unbox

from dynamics import _link

try:
    import fcntl
except ImportError:  # no POSIX file locks (Windows): each process compiles for itself
    fcntl = None

TUNING = "x86-64-v3"
"""The CPU name numba compiles for on an x86-64 host that implements this level (module docstring)."""

LEVEL = ("+avx2", "+fma", "+bmi2", "+movbe")
"""Features of the x86-64-v3 level that the host must have for :data:`TUNING`."""


def tune(machine: str | None = None, features: str | None = None) -> str | None:
    """Set numba's CPU name to :data:`TUNING` on an x86-64 host (``machine``, default
    :func:`platform.machine`) whose features (numba's string of them, default the host's)
    include :data:`LEVEL`, unless a CPU name is set already (``NUMBA_CPU_NAME``); the name in
    force is returned. Called at import, before any kernel is compiled."""
    if numba_config.CPU_NAME is None and (machine or platform.machine()).lower() in ("x86_64", "amd64"):
        features = get_host_cpu_features() if features is None else features
        if set(LEVEL) <= set(features.split(",")):
            numba_config.CPU_NAME = TUNING
    return numba_config.CPU_NAME


tune()
if numba_config.CPU_NAME is not None:  # kept through numba's reading of its variables again (docstring)
    os.environ.setdefault("NUMBA_CPU_NAME", numba_config.CPU_NAME)
_link.install()


class Kernel(CPUDispatcher):
    """numba's CPU dispatcher, compiling calls from compiled code for the arguments' types
    with constants widened to their type, but at the positions ``literal`` (module docstring),
    and compiling a specialisation in one process at a time (:meth:`compile`)."""

    literal: frozenset = frozenset()

    @property
    def name(self) -> str:
        """The kernel's dotted name, ``module.qualname``."""
        return f"{self.py_func.__module__}.{self.py_func.__qualname__}"

    def get_call_template(self, args, kws):
        return super().get_call_template(tuple(a if i in self.literal else types.unliteral(a)
                                               for i, a in enumerate(args)),
                                         {k: types.unliteral(v) for k, v in kws.items()})

    def compile(self, sig):
        """numba's compile (from memory, the disk cache, or compiling and saving), holding
        a lock file of the specialisation in the cache directory while not in memory:
        processes sharing the cache (a solve and the helpers compiling ahead of it,
        :mod:`optdyn.solvers.compile_ahead`; the workers of a sweep) compile each
        specialisation once, the others waiting for it and then loading it. Within a
        process numba's own lock is taken first, so that its threads never wait on each
        other's lock files."""
        args = tuple(sigutils.normalize_signature(sig)[0])
        if args in self.overloads:
            return super().compile(sig)
        path = getattr(self._cache, "_cache_path", None)
        with _link.compiling(self):
            if not self._can_compile or path is None or fcntl is None:
                entry = super().compile(sig)
            else:
                name = hashlib.sha1(f"{self.name}{args}".encode()).hexdigest()
                with global_compiler_lock, _locked(os.path.join(path, "locks", name)):
                    entry = super().compile(sig)
        _link.register(self, args)
        return entry

    def enable_caching(self) -> None:
        """numba's disk cache, recording the callees a specialisation calls by symbol
        (:mod:`dynamics._link`)."""
        self._cache = _link.Cache(self.py_func)


_HELD: set[str] = set()  # the lock files this process holds (its compiles nest under numba's lock)


@contextmanager
def _locked(path: str):
    """An exclusive lock on the file ``path`` (made if missing), released on exit — also
    when the holding process dies; no lock if the directory cannot be written. Reentrant
    within the process: kernels made by one factory (closures) share a dotted name, so a
    compile that nests another of the same argument types asks again for the lock it holds,
    which a second ``flock`` on the file would wait for forever."""
    if path in _HELD:
        yield
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _HELD.add(path)
        yield
    finally:
        _HELD.discard(path)
        os.close(fd)


_KERNELS: list[Kernel] = []  # every kernel made by njit, for specialisations()


def njit(fn=None, *, cache: bool = False, literal: tuple[str, ...] = (), **options):
    """``numba.njit`` with the :class:`Kernel` dispatcher (same options); the parameters
    named in ``literal`` are compiled per constant value."""
    def decorate(py_func):
        kernel = Kernel(py_func=py_func, locals={}, targetoptions={"nopython": True, **options})
        names = list(inspect.signature(py_func).parameters)
        kernel.literal = frozenset(names.index(name) for name in literal)
        if cache:
            kernel.enable_caching()
        _KERNELS.append(kernel)
        return kernel
    return decorate if fn is None else decorate(fn)


def specialisations() -> dict[str, list[str]]:
    """The specialisations of every kernel this process compiled or loaded so far, and of those
    their code calls (recorded in the disk cache, :attr:`dynamics._link.Library.kernels`), by the
    kernel's dotted name: what a workload compiles on an empty cache, whatever the cache holds
    (the suite holds the main job to a budget of them)."""
    found: dict[str, set[str]] = {}
    for kernel in _KERNELS:
        for args, cres in kernel.overloads.items():
            found.setdefault(kernel.name, set()).add(str(args))
            for name, called in getattr(cres.library, "kernels", ()):
                found.setdefault(name, set()).add(str(called))
    return {name: sorted(found[name]) for name in sorted(found)}


def allocation_free(fn=None, *, inline: str = "never", literal: tuple[str, ...] = ()):
    """``njit(cache=True)`` without reference counting (see the module docstring);
    ``inline="always"`` inlines the function into its callers' numba IR."""
    decorate = njit(cache=True, inline=inline, literal=literal, _nrt=False)
    return decorate if fn is None else decorate(fn)


def entry_point(fn):
    """An :func:`allocation_free` kernel called from Python on checked arrays only (see the
    module docstring): calls with argument types it was not compiled for raise TypeError."""
    kernel = allocation_free(fn)
    kernel._can_compile = False  # disable_compile() without its check that a signature exists
    return kernel


def call_checked(kernel, *args):
    """``kernel(*args)`` for an :func:`entry_point` whose arguments were converted and
    checked, compiling it for their types (or loading it from the cache) if needed."""
    kernel._can_compile = True
    try:
        return kernel(*args)
    finally:
        kernel._can_compile = False


@intrinsic(prefer_literal=True)
def at_order(typingctx, order, least, kernel, args):
    """``kernel(*args)`` if the derivative order ``order`` is at least ``least``, for a
    kernel compiled per order (``literal``): decided while typing, so that lower orders do
    not compile ``kernel`` (module docstring); at run time for a run-time order. The call is
    emitted in the caller's own code: no compiled unit of its own, whose compilation would
    optimise ``kernel``'s code once more."""
    if not isinstance(least, types.IntegerLiteral) or not isinstance(args, types.BaseTuple):
        return None
    settled = isinstance(order, types.IntegerLiteral)
    skip = settled and order.literal_value < least.literal_value
    call = None if skip else typingctx.resolve_function_type(kernel, tuple(args), {})

    def codegen(context, builder, signature, values):
        if skip:
            return context.get_dummy_value()
        arguments = [context.cast(builder, builder.extract_value(values[3], i), args[i], call.args[i])
                     for i in range(len(args))]
        run = context.get_function(kernel, call)
        if settled:
            run(builder, arguments)
        else:
            reached = builder.icmp_signed(">=", values[0], context.get_constant(order, least.literal_value))
            with builder.if_then(reached):
                run(builder, arguments)
        return context.get_dummy_value()
    return types.none(order, least, kernel, args), codegen


@intrinsic
def read_only(typingctx, array):
    """``array`` typed read-only: the same array, not a copy. A kernel is compiled per
    read-only flag of its arguments; a caller that passes a writable array where the others
    pass a read-only one (a workspace's zeros for gravity, where the others pass the model
    record's gravity) passes it through this, so that the kernel is compiled once."""
    if not isinstance(array, types.Array):
        return None

    def codegen(context, builder, signature, args):
        return imputils.impl_ret_borrowed(context, builder, signature.return_type, args[0])
    return array.copy(readonly=True)(array), codegen


# ---- workspaces passed by reference ------------------------------------------------------------

class Pinned(types.Type):
    """A record (named tuple) of arrays held once in memory and passed between kernels as one
    pointer (:func:`pin`); its fields read as the record's (``work.field``)."""

    def __init__(self, record: types.BaseTuple) -> None:
        self.record = record
        super().__init__(name=f"Pinned({record})")

    @property
    def key(self):
        return self.record


class PinnedRecord:
    """A :class:`Pinned` record in Python (returned by a kernel): opaque, passed back to
    kernels as it is."""

    def __init__(self, numba_type: Pinned, meminfo) -> None:
        self._numba_type_, self._meminfo = numba_type, meminfo


@typeof_impl.register(PinnedRecord)
def _typeof_pinned(value, context):
    return value._numba_type_


@register_default(Pinned)
class _PinnedModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("meminfo", types.MemInfoPointer(types.voidptr))])


@infer_getattr
class _PinnedAttributes(AttributeTemplate):
    key = Pinned

    def generic_resolve(self, typ, attr):
        if attr in typ.record.fields:
            return typ.record.types[typ.record.fields.index(attr)]


@lower_getattr_generic(Pinned)
def _pinned_getattr(context, builder, typ, value, attr):
    """The field, read through the meminfo's data pointer without the runtime
    (NRT_MemInfo_data_fast), so that kernels compiled without NRT read it too."""
    meminfo = cgutils.create_struct_proxy(typ)(context, builder, value=value).meminfo
    data = builder.load(cgutils.gep_inbounds(builder, builder.bitcast(meminfo, _meminfo_struct_type.as_pointer()),
                                             0, 3))
    record = builder.bitcast(data, context.get_data_type(typ.record).as_pointer())
    i = typ.record.fields.index(attr)
    field = typ.record.types[i]
    value = context.data_model_manager[field].load_from_data_pointer(builder,
                                                                     cgutils.gep_inbounds(builder, record, 0, i))
    return imputils.impl_ret_borrowed(context, builder, field, value)


def _release(context, module, record):
    """void release(void *data, size_t size, void *info): the references the record holds
    dropped when its memory is freed."""
    voidptr = context.get_value_type(types.voidptr)
    fnty = ir.FunctionType(ir.VoidType(), [voidptr, context.get_value_type(types.uintp), voidptr])
    fn = cgutils.get_or_insert_function(module, fnty, f"optdyn.release.{record}")
    if fn.is_declaration:
        fn.linkage = "linkonce_odr"
        builder = ir.IRBuilder(fn.append_basic_block())
        ptr = builder.bitcast(fn.args[0], context.get_data_type(record).as_pointer())
        context.nrt.decref(builder, record, context.data_model_manager[record].load_from_data_pointer(builder, ptr))
        builder.ret_void()
    return fn


@intrinsic
def pin(typingctx, record):
    """The named tuple ``record`` copied into memory of numba's runtime (which keeps
    references to its arrays until the last :class:`Pinned` of it is gone): a kernel
    passes it on as one pointer instead of every array's fields (compiling a kernel that
    takes a record of 145 arrays, flattened into 1391 scalar arguments, cost 10 s).
    Called where NRT is enabled (the workspace's maker)."""
    if not isinstance(record, types.BaseTuple):
        return None

    def codegen(context, builder, signature, args):
        data_type = context.get_data_type(record)
        size = context.get_constant(types.uintp, context.get_abi_sizeof(data_type))
        meminfo = context.nrt.meminfo_alloc_dtor(builder, size, _release(context, builder.module, record))
        context.nrt.incref(builder, record, args[0])
        data = builder.bitcast(context.nrt.meminfo_data(builder, meminfo), data_type.as_pointer())
        builder.store(context.data_model_manager[record].as_data(builder, args[0]), data)
        pinned = cgutils.create_struct_proxy(signature.return_type)(context, builder)
        pinned.meminfo = meminfo
        return pinned._getvalue()
    return Pinned(record)(record), codegen


@box(Pinned)
def _box_pinned(typ, value, c):
    meminfo = c.box(types.MemInfoPointer(types.voidptr),
                    cgutils.create_struct_proxy(typ)(c.context, c.builder, value=value).meminfo)
    make = c.pyapi.unserialize(c.pyapi.serialize_object(PinnedRecord))
    numba_type = c.pyapi.unserialize(c.pyapi.serialize_object(typ))
    out = c.pyapi.call_function_objargs(make, [numba_type, meminfo])
    for obj in (meminfo, make, numba_type):
        c.pyapi.decref(obj)
    return out


@unbox(Pinned)
def _unbox_pinned(typ, obj, c):
    boxed = c.pyapi.object_getattr_string(obj, "_meminfo")
    pinned = cgutils.create_struct_proxy(typ)(c.context, c.builder)
    pinned.meminfo = c.unbox(types.MemInfoPointer(types.voidptr), boxed).value
    c.pyapi.decref(boxed)
    return NativeValue(pinned._getvalue())

