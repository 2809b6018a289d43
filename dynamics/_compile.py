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
README's main job spent a fifth of its cold start on such duplicates. The exception is an argument a kernel names in ``literal``: a flag whose value
prunes whole branches (the derivative order of the Runge–Kutta interval: at order 0 it is
the forward dynamics alone, a fraction of the code, and runs faster) is compiled per value.

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
"""
from __future__ import annotations

import inspect

from numba.core import types
from numba.core.registry import CPUDispatcher


class Kernel(CPUDispatcher):
    """numba's CPU dispatcher, compiling calls from compiled code for the arguments' types
    with constants widened to their type, but at the positions ``literal`` (module docstring)."""

    literal: frozenset = frozenset()

    def get_call_template(self, args, kws):
        return super().get_call_template(tuple(a if i in self.literal else types.unliteral(a)
                                               for i, a in enumerate(args)),
                                         {k: types.unliteral(v) for k, v in kws.items()})


def njit(fn=None, *, cache: bool = False, literal: tuple[str, ...] = (), **options):
    """``numba.njit`` with the :class:`Kernel` dispatcher (same options); the parameters
    named in ``literal`` are compiled per constant value."""
    def decorate(py_func):
        kernel = Kernel(py_func=py_func, locals={}, targetoptions={"nopython": True, **options})
        names = list(inspect.signature(py_func).parameters)
        kernel.literal = frozenset(names.index(name) for name in literal)
        if cache:
            kernel.enable_caching()
        return kernel
    return decorate if fn is None else decorate(fn)


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
