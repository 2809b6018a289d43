"""Reusable workspace of the first-order algorithms: Pinocchio's Model/Data split.

The model record (``Model.arrays``) holds what never changes; a workspace (:data:`Data`,
made by :func:`new_data`) holds every intermediate array of forward kinematics, RNEA,
CRBA, ABA, M⁻¹ and the first-order derivatives. The ``*_into`` kernels take one and
allocate nothing, so a loop over the knots of a trajectory allocates its workspace once
(once per thread when they run in parallel: no two threads share one) and every
evaluation after that is allocation-free.

A workspace is one float64 buffer of :func:`data_size` entries, cut into the fields by
:func:`data_views`. The single-state functions called from Python (``dynamics.rnea`` and
the others of Pinocchio's per-call API) reuse one buffer per model (:func:`model_workspace`,
a :func:`call_buffer`), which also holds a packed copy of the model record, and receive
model and workspace as that one array: numba unboxes every array of
an argument on each call (about 0.1 µs per array, 0.45 µs for the record's tuple of five),
which on a 6-DoF arm costs as much as the algorithm; so would allocating the workspace.

The model is immutable and holds no workspace: this module keeps the buffer of each model
beside it, made on the model's first single-state call and dropped with the model, as
Pinocchio's Data is made from, and lives beside, its Model. The kernels hold the GIL, so
calls from several Python threads take turns on a buffer; the batched and parallel
kernels make their own workspaces (:func:`new_data`).
"""
from __future__ import annotations

import weakref
from collections import namedtuple

import numpy as np
from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from ._checks import NO_FORCE, as_state, as_vector
from ._compile import allocation_free, call_checked, njit
from .kinematics import tangent_size
from .model import Model, ModelRecord

Data = namedtuple("Data", [
    "R", "p", "S",               # world poses (n, 3, 3), (n, 3), motion subspaces (nv, 6)
    "I", "IC",                   # body inertias I_i, composite inertias I_i^C (n, 6, 6): one block, see below
    "IA", "Dinv", "BC",          # articulated inertias I_i^A, D_i⁻¹ blocks, composite B_i^C (n, 6, 6)
    "vel", "acc", "fC", "pA",    # body velocities, accelerations, forces, biases (n, 6)
    "da",                        # acceleration and force increments (2, n, 6)
    "U", "UD", "rates",          # U = I^A S, U D⁻¹ (nv, 6); Ψ̇, Ψ̈, Ṡ (3, nv, 6)
    "u", "tau",                  # joint-space vectors (nv,)
    "Minv", "dq", "dv",          # (nv, nv) matrices
    "F", "P",                    # force and motion sets of M⁻¹, a row per spatial coordinate (n, 6, nv)
    "T",                         # joint vectors of the derivative passes (nv, 6, 6)
    "h", "gauss",                # scratch rows (4, 6) and the D_i elimination tableau (6, 12)
])
"""The views of a workspace (see the shapes above; n bodies, nv DoF columns).

Each field holds one quantity in world coordinates, whichever algorithm ran. ``I`` and
``IC`` are two names of one block: the forward kinematics writes the body inertias I_i
into ``I``, and the passes that form the composites I_i^C = I_i + Σ_{children c} I_c^C
(CRBA, the derivative passes) sum them in place, leaves to root, to save a copy; after
such a pass ``IC`` holds the composites and ``I`` is spent. The articulated inertias I_i^A
have their own block ``IA``: ABA and M⁻¹ have the kinematics write the body inertias
straight into it (I_i^A starts as I_i), and leave ``I`` unwritten."""


@allocation_free
def data_size(n, nv):
    """Number of float64 entries of the workspace of a model of n bodies and nv DoF columns
    (the blocks of :func:`data_views`)."""
    return 4 * n * 36 + 6 * n * 6 + 6 * nv * 6 + 2 * nv + 3 * nv * nv + 2 * n * nv * 6 + n * 12 + nv * 36 + 24 + 72


def _c_view_intrinsic(name: str, readonly: bool):
    """The intrinsic ``w[k : k + prod(shape)].reshape(shape)`` for a contiguous ``w``,
    unchecked: the C-contiguous view built in place, typed read-only if ``readonly``.
    numba's reshape calls a runtime helper (about 30 ns), and the sixteen views of a call
    buffer would cost a third of the RNEA on a 6-DoF arm."""

    def typer(typingctx, w, k, shape):
        return w.copy(ndim=len(shape), layout="C", readonly=readonly)(w, k, shape), codegen

    def codegen(context, builder, signature, args):
        source = make_array(signature.args[0])(context, builder, args[0])
        view = make_array(signature.return_type)(context, builder)
        dims = [context.cast(builder, d, t, types.intp)
                for d, t in zip(cgutils.unpack_tuple(builder, args[2]), signature.args[2])]
        strides, stride = [], source.itemsize
        for d in reversed(dims):
            strides.insert(0, stride)
            stride = builder.mul(stride, d)
        start = context.cast(builder, args[1], signature.args[1], types.intp)
        populate_array(view, data=builder.gep(source.data, [start]), shape=dims, strides=strides,
                       itemsize=source.itemsize, meminfo=source.meminfo, parent=source.parent)
        return impl_ret_borrowed(context, builder, signature.return_type, view._getvalue())

    typer.__name__ = typer.__qualname__ = name
    return intrinsic(typer)


c_view = _c_view_intrinsic("c_view", readonly=False)
"""A writable view (workspace fields); see :func:`_c_view_intrinsic`."""
c_view_readonly = _c_view_intrinsic("c_view_readonly", readonly=True)
"""A view typed read-only, as numba types the model's read-only arrays (the model record of
a call buffer: the kernels then compile once for both)."""


@allocation_free(inline="always")
def _entries(shape):
    """The number of entries of an array of the given shape."""
    size = 1
    for s in shape:
        size *= s
    return size


@allocation_free(inline="always")
def _block(w, k, shape):
    """The view of ``w`` from entry k with the given shape, and the entry after it."""
    return c_view(w, k, shape), k + _entries(shape)


@allocation_free(inline="always")
def _record_block(w, k, shape):
    """:func:`_block` typed read-only, for the model record of a call buffer."""
    return c_view_readonly(w, k, shape), k + _entries(shape)


@allocation_free(inline="always")
def data_views(topology, w):
    """The workspace cut from the buffer ``w`` of :func:`data_size` entries: its fields
    are views of ``w``, by blocks of equally shaped arrays (``I`` and ``IC`` the same
    view, see :data:`Data`). Inlined into its callers, so
    the views are never handed across a call compiled without reference counting."""
    n, nv = topology.shape[0], tangent_size(topology)
    B66, k = _block(w, 0, (4, n, 6, 6))
    B6, k = _block(w, k, (6, n, 6))
    C6, k = _block(w, k, (6, nv, 6))
    vec, k = _block(w, k, (2, nv))
    NN, k = _block(w, k, (3, nv, nv))
    FP, k = _block(w, k, (2, n, 6, nv))
    R, k = _block(w, k, (n, 3, 3))
    p, k = _block(w, k, (n, 3))
    T, k = _block(w, k, (nv, 6, 6))
    h, k = _block(w, k, (4, 6))
    gauss, k = _block(w, k, (6, 12))
    return Data(R, p, C6[0], B66[0], B66[0], B66[1], B66[2], B66[3], B6[0], B6[1], B6[2], B6[3], B6[4:6],
                C6[1], C6[2], C6[3:6], vec[0], vec[1], NN[0], NN[1], NN[2], FP[0], FP[1], T, h, gauss)


def call_buffer(m: ModelRecord) -> np.ndarray:
    """The one array a single-state kernel called from Python receives (see the module
    docstring): the model record ``m`` packed — the body count n (entry ``BODY_COUNT``), the
    int64 topology's bits reinterpreted as float64 (from entry ``TOPOLOGY_START``: one array,
    not two, is what makes the call cheap), the joint placements, axes, inertias, gravity and
    armature — followed by a workspace; cut by :func:`call_views`."""
    n, nv = m.topology.shape[0], tangent_size(m.topology)
    head = np.concatenate(([n], m.topology.ravel().view(np.float64), m.joint_placement.ravel(), m.axis.ravel(),
                           m.inertia.ravel(), m.gravity, m.armature))
    return np.concatenate((head, np.empty(data_size(n, nv))))


BODY_COUNT, TOPOLOGY_START = 0, 1
"""Entries of a :func:`call_buffer`: the body count n, then the first of the topology's 7·n."""


@allocation_free(inline="always")
def call_views(buffer):
    """(model record, workspace) cut from a :func:`call_buffer`, both views of ``buffer``."""
    n = int(buffer[BODY_COUNT])
    topology = c_view_readonly(buffer.view(np.int64), TOPOLOGY_START, (n, 7))
    joint_placement, k = _record_block(buffer, TOPOLOGY_START + 7 * n, (n, 4, 4))
    axis, k = _record_block(buffer, k, (n, 3))
    inertia, k = _record_block(buffer, k, (n, 13))
    gravity, k = _record_block(buffer, k, (3,))
    armature, k = _record_block(buffer, k, (tangent_size(topology),))
    return ModelRecord(topology, joint_placement, axis, inertia, gravity, armature), data_views(topology, buffer[k:])


@njit(cache=True)
def new_data(topology):
    """A fresh workspace (uninitialised) for the model of ``topology``: one allocation."""
    return data_views(topology, np.empty(data_size(topology.shape[0], tangent_size(topology))))


_BUFFERS: dict[int, np.ndarray] = {}
"""id(model) → its call buffer; an entry is removed when its model is collected (so the id
is never reused while the entry lives). A dict keyed by id: a weak-keyed dictionary's
lookup runs Python code, and costs a tenth of an RNEA on a 6-DoF arm."""


def model_workspace(model: Model) -> np.ndarray:
    """The :func:`call_buffer` of ``model``'s single-state calls: made on first use, kept
    beside the model (never in it) and dropped when the model is collected."""
    try:
        return _BUFFERS[id(model)]
    except KeyError:
        key = id(model)
        _BUFFERS[key] = buffer = call_buffer(model.arrays)
        weakref.finalize(model, _BUFFERS.pop, key, None)
        return buffer


def call_on_configuration(kernel, model: Model, q, out: np.ndarray) -> np.ndarray:
    """``kernel(buffer, q, out)`` for an :func:`dynamics._compile.entry_point` of q alone,
    ``buffer`` the model's :func:`model_workspace`, q checked and named in Python only if
    the kernel refuses it; returns ``out``."""
    buffer = model_workspace(model)
    try:
        kernel(buffer, q, out)
    except (TypeError, ValueError):  # not a float64 vector, or bad input: check and name it
        call_checked(kernel, buffer, as_vector(q, model.nq, "q"), out)
    return out


def call_on_state(kernel, model: Model, q, v, w, w_name: str, f_ext, out: np.ndarray) -> np.ndarray:
    """``kernel(buffer, q, v, w, f_ext, out)`` for an :func:`dynamics._compile.entry_point`
    of a state (w named ``w_name``), ``buffer`` the model's :func:`model_workspace`, the
    arguments checked and named in Python only if the kernel refuses them; returns ``out``."""
    buffer = model_workspace(model)
    try:
        kernel(buffer, q, v, w, NO_FORCE if f_ext is None else f_ext, out)
    except (TypeError, ValueError):  # not float64 vectors, or bad input: check and name them
        call_checked(kernel, buffer, *as_state(model, q, v, w, w_name, f_ext), out)
    return out
