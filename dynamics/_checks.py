"""Input validation shared by the public functions: cheap shape and type checks.

Finiteness is checked inside the compiled kernels (``all_finite``), where it costs
nanoseconds; here only what Python must see: array type, dtype and shape.
"""
from __future__ import annotations

import numpy as np

from .model import Frame, Model


class InputError(ValueError):
    """The ValueError of bad input found inside a compiled kernel, whose message is its
    arguments joined by spaces: numba's nopython mode formats no strings, so a kernel
    raises ``InputError("q: joint number", i, "has norm", s)`` and the caller reads
    "q: joint number 3 has norm 1.5" (a plain ValueError would print the tuple)."""

    def __str__(self) -> str:
        return " ".join(str(a) for a in self.args)


FLOAT64 = np.dtype(np.float64)
UNIT_STRIDE = (FLOAT64.itemsize,)


def as_vector(x, n: int, name: str) -> np.ndarray:
    """``x`` as a writable C-contiguous float64 array of shape (n,), else ValueError naming
    it (a read-only array is copied: the kernels are compiled for writable arrays, and a
    read-only one would compile them again for its own type)."""
    if type(x) is np.ndarray and x.dtype is FLOAT64 and x.shape == (n,) and x.strides == UNIT_STRIDE \
            and x.flags.writeable:
        return x  # the common case
    if type(x) is not np.ndarray or x.dtype is not FLOAT64 or not x.flags.c_contiguous or not x.flags.writeable:
        try:
            x = np.array(x, dtype=np.float64, order="C")
        except (TypeError, ValueError):
            raise ValueError(f"{name}: expected {n} real numbers, got {x!r}") from None
    if x.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got shape {x.shape}")
    return x


def as_batch(x, n: int, name: str) -> np.ndarray:
    """``x`` as a writable C-contiguous float64 array of shape (K, n) (leading axis =
    knots; a read-only array is copied, as by :func:`as_vector`)."""
    try:
        x = np.require(x, dtype=np.float64, requirements="CW")
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected an array of shape (K, {n}), got {x!r}") from None
    if x.ndim != 2 or x.shape[1] != n:
        raise ValueError(f"{name}: expected shape (K, {n}), got shape {x.shape}")
    return x


NO_FORCE = np.zeros((0, 6))
"""The ``f_ext`` the kernels receive when no external force is applied."""


def as_forces(model: Model, f_ext) -> np.ndarray:
    """``f_ext`` as a C-contiguous (njoints, 6) float64 array of spatial forces, ``NO_FORCE``
    for None; ValueError naming it otherwise (NaN/inf: raised by the kernels)."""
    if f_ext is None:
        return NO_FORCE
    n = model.njoints
    f = f_ext
    if type(f) is not np.ndarray or f.dtype is not FLOAT64 or not f.flags.c_contiguous or not f.flags.writeable:
        try:
            f = np.require(f_ext, dtype=np.float64, requirements="CW")
        except (TypeError, ValueError):
            raise ValueError(f"f_ext: expected an array of shape ({n}, 6), got {f_ext!r}") from None
    if f.shape != (n, 6):
        raise ValueError(f"f_ext: expected shape ({n}, 6) (one [linear; angular] force per joint), got {f.shape}")
    return f  # finiteness: checked by the kernels (dynamics.rnea.check_forces)


def check_frame(model: Model, frame: str) -> Frame:
    """The model frame named ``frame`` (ValueError listing known names otherwise)."""
    if not isinstance(frame, str):
        raise ValueError(f"frame: expected a frame name (str), got {frame!r}")
    return model.frame(frame)


def as_state(model: Model, q, v, w, w_name: str, f_ext) -> tuple[np.ndarray, ...]:
    """(q (nq,), v (nv,), w (nv,), f_ext) as the kernels take them (:func:`as_vector`,
    :func:`as_forces`); ValueError naming the first bad one (``w_name`` for w)."""
    return (as_vector(q, model.nq, "q"), as_vector(v, model.nv, "v"), as_vector(w, model.nv, w_name),
            as_forces(model, f_ext))
