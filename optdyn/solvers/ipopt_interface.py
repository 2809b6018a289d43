"""Ipopt's C interface (``IpStdCInterface.h``, Ipopt ≥ 3.14) called through ctypes, on the
Ipopt library cyipopt loads.

:func:`problem` gives the subset of ``cyipopt.Problem`` the IPOPT solver uses —
``add_option``, ``solve`` and ``get_current_iterate`` over an object with cyipopt's
callbacks (``objective``, ``gradient``, ``constraints``, ``jacobian``,
``jacobianstructure``, ``hessian``, ``hessianstructure``, ``intermediate``) — making the
same C calls as cyipopt's wrapper, with two differences:

- the callbacks' values are copied into Ipopt's arrays at once. cyipopt 1.7 copies the
  Jacobian's and the Hessian's values element by element in Python (some 37 ns an element:
  on the Solo-12 trot, 136 200 Jacobian and 59 466 Hessian entries, 7.8 ms of a 42 ms
  iteration);
- Ipopt runs without the GIL (ctypes releases it around a foreign call; each callback takes
  it back), so that a pool thread begun by a callback reaches its compiled kernel while Ipopt
  works.

Where no Ipopt library is found among those the process has loaded (outside Linux, say),
:func:`problem` is ``cyipopt.Problem`` itself. Either way the iterates are the same to the
bit (the same library, options and callbacks). An evaluation error
(``cyipopt.CyIpoptEvaluationError``) makes a callback return false, as cyipopt does (Ipopt
cuts its step back); any other exception also stops the solve at the next iteration and is
raised by :meth:`Problem.solve`.
"""
from __future__ import annotations

import ctypes
import functools
import importlib
import os
from ctypes import POINTER, c_bool, c_double, c_int, c_void_p

import cyipopt
import numpy as np

_Number, _Index = POINTER(c_double), POINTER(c_int)
EVAL_F = ctypes.CFUNCTYPE(c_bool, c_int, _Number, c_bool, _Number, c_void_p)
EVAL_GRAD_F = ctypes.CFUNCTYPE(c_bool, c_int, _Number, c_bool, _Number, c_void_p)
EVAL_G = ctypes.CFUNCTYPE(c_bool, c_int, _Number, c_bool, c_int, _Number, c_void_p)
EVAL_JAC_G = ctypes.CFUNCTYPE(c_bool, c_int, _Number, c_bool, c_int, c_int, _Index, _Index, _Number, c_void_p)
EVAL_H = ctypes.CFUNCTYPE(c_bool, c_int, _Number, c_bool, c_double, c_int, _Number, c_bool, c_int, _Index, _Index,
                          _Number, c_void_p)
INTERMEDIATE = ctypes.CFUNCTYPE(c_bool, c_int, c_int, *(c_double,) * 8, c_int, c_void_p)
"""The callbacks' C types (``Eval_F_CB`` … ``Intermediate_CB``: ``ipindex`` is cyipopt's ``int``)."""

_SIGNATURES = {
    "CreateIpoptProblem": (c_void_p, [c_int, c_void_p, c_void_p, c_int, c_void_p, c_void_p, c_int, c_int, c_int,
                                      EVAL_F, EVAL_G, EVAL_GRAD_F, EVAL_JAC_G, EVAL_H]),
    "FreeIpoptProblem": (None, [c_void_p]),
    "AddIpoptStrOption": (c_bool, [c_void_p, ctypes.c_char_p, ctypes.c_char_p]),
    "AddIpoptNumOption": (c_bool, [c_void_p, ctypes.c_char_p, c_double]),
    "AddIpoptIntOption": (c_bool, [c_void_p, ctypes.c_char_p, c_int]),
    "SetIntermediateCallback": (c_bool, [c_void_p, INTERMEDIATE]),
    "IpoptSolve": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    "GetIpoptCurrentIterate": (c_bool, [c_void_p, c_bool, c_int, c_void_p, c_void_p, c_void_p, c_int, c_void_p,
                                        c_void_p]),
}


def _loaded_libraries() -> list[str]:
    """Paths of the shared libraries mapped into this process (Linux; empty elsewhere)."""
    try:
        with open("/proc/self/maps") as maps:
            fields = [line.split(None, 5) for line in maps]
    except OSError:
        return []
    return sorted({f[5].strip() for f in fields if len(f) == 6})


@functools.cache
def _wrapper():
    """cyipopt's compiled module (its ``Problem``'s): where it lies, its status messages."""
    return importlib.import_module(cyipopt.Problem.__module__)


@functools.cache
def library() -> ctypes.CDLL | None:
    """The Ipopt library cyipopt has loaded, its C interface declared; None if not found.
    Where the process has loaded several (another package's own Ipopt, say), the one nearest
    cyipopt's extension module in the file system: the one it was installed with."""
    wrapper = os.path.realpath(_wrapper().__file__)
    found = [path for path in _loaded_libraries() if os.path.basename(path).startswith("libipopt") and ".so" in path]
    for path in sorted(found, key=lambda path: -len(os.path.commonpath([os.path.realpath(path), wrapper]))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if not all(hasattr(lib, name) for name in _SIGNATURES):
            continue
        for name, (restype, argtypes) in _SIGNATURES.items():
            getattr(lib, name).restype, getattr(lib, name).argtypes = restype, argtypes
        return lib
    return None


def problem(n: int, m: int, problem_obj, lb: np.ndarray, ub: np.ndarray, cl: np.ndarray, cu: np.ndarray):
    """The NLP ``problem_obj`` (cyipopt's callbacks) with variable bounds lb, ub (n,) and
    constraint bounds cl, cu (m,): a :class:`Problem` on Ipopt's C interface, or
    ``cyipopt.Problem`` where the library is not found (module docstring)."""
    lib = library()
    if lib is None:
        return cyipopt.Problem(n=n, m=m, problem_obj=problem_obj, lb=lb, ub=ub, cl=cl, cu=cu)
    return Problem(lib, n, m, problem_obj, lb, ub, cl, cu)


def _doubles(a, size: int) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=float), (size,))).copy()


class Problem:
    """``cyipopt.Problem``'s ``add_option``, ``solve`` and ``get_current_iterate`` on Ipopt's
    C interface (module docstring)."""

    def __init__(self, lib: ctypes.CDLL, n: int, m: int, problem_obj, lb, ub, cl, cu) -> None:
        self.lib, self.n, self.m, self.obj, self.error = lib, n, m, problem_obj, None
        self.bounds = tuple(_doubles(a, size) for a, size in ((lb, n), (ub, n), (cl, m), (cu, m)))
        self.structure = {what: tuple(np.ascontiguousarray(a, dtype=np.intc) for a in getattr(problem_obj, what)())
                          for what in ("jacobianstructure", "hessianstructure")}
        self.callbacks = (EVAL_F(self._objective), EVAL_G(self._constraints), EVAL_GRAD_F(self._gradient),
                          EVAL_JAC_G(self._jacobian), EVAL_H(self._hessian))  # kept alive with the problem
        self.intermediate = INTERMEDIATE(self._intermediate)
        lb, ub, cl, cu = (a.ctypes.data for a in self.bounds)
        self.handle = lib.CreateIpoptProblem(n, lb, ub, m, cl, cu, self.structure["jacobianstructure"][0].size,
                                             self.structure["hessianstructure"][0].size, 0, *self.callbacks)
        if not self.handle:
            raise RuntimeError("Ipopt could not create the problem (CreateIpoptProblem)")
        lib.SetIntermediateCallback(self.handle, self.intermediate)

    def close(self) -> None:
        """Free Ipopt's problem and drop the callbacks (which refer to this object), as
        ``cyipopt.Problem.close`` frees its own: a solve's KKT factors and workspaces go at
        once instead of with the next garbage collection."""
        if getattr(self, "handle", None):
            self.lib.FreeIpoptProblem(self.handle)
            self.handle = None
        self.callbacks = self.intermediate = self.obj = None

    def __del__(self) -> None:
        self.close()

    def add_option(self, name: str, value) -> None:
        """Set an Ipopt option (str, int or float value); TypeError if Ipopt rejects it."""
        key = name.encode()
        if isinstance(value, (str, bytes)):
            ok = self.lib.AddIpoptStrOption(self.handle, key, value.encode() if isinstance(value, str) else value)
        elif type(value) is float:
            ok = self.lib.AddIpoptNumOption(self.handle, key, value)
        elif type(value) is int:
            ok = self.lib.AddIpoptIntOption(self.handle, key, value)
        else:
            raise TypeError("Invalid option type")
        if not ok:
            raise TypeError("Error while assigning an option")

    def solve(self, x0, lagrange=None, zl=None, zu=None) -> tuple[np.ndarray, dict]:
        """Ipopt from x0 (n,) (and the multipliers lagrange (m,), zl, zu (n,) for a warm start):
        (x, info) as cyipopt returns them; an exception of a callback is raised here."""
        x, g, obj = _doubles(x0, self.n), np.zeros(self.m), c_double(0.0)
        duals = [_doubles(0.0 if a is None else a, size) for a, size in ((lagrange, self.m), (zl, self.n), (zu, self.n))]
        self.error = None
        status = self.lib.IpoptSolve(self.handle, x.ctypes.data, g.ctypes.data, ctypes.addressof(obj),
                                     *(a.ctypes.data for a in duals), None)
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return x, {"x": x, "g": g, "obj_val": obj.value, "mult_g": duals[0], "mult_x_L": duals[1],
                   "mult_x_U": duals[2], "status": status,
                   "status_msg": _wrapper().STATUS_MESSAGES.get(status, b"Unknown status")}

    def get_current_iterate(self, scaled: bool = False) -> dict | None:
        """The current iterate's vectors (within the intermediate callback), as cyipopt's."""
        out = {"x": np.zeros(self.n), "mult_x_L": np.zeros(self.n), "mult_x_U": np.zeros(self.n),
               "g": np.zeros(self.m), "mult_g": np.zeros(self.m)}
        ok = self.lib.GetIpoptCurrentIterate(self.handle, scaled, self.n, out["x"].ctypes.data,
                                             out["mult_x_L"].ctypes.data, out["mult_x_U"].ctypes.data, self.m,
                                             out["g"].ctypes.data, out["mult_g"].ctypes.data)
        return out if ok else None

    # ------------------------------------------------------------ the C callbacks
    def _guarded(self, evaluate) -> bool:
        """``evaluate()``'s truth, false on an evaluation error; any other exception is kept
        for :meth:`solve` (and stops the solve at the next iteration)."""
        try:
            return bool(evaluate())
        except cyipopt.CyIpoptEvaluationError:
            return False
        except BaseException as error:  # noqa: BLE001 — raised by solve()
            if self.error is None:
                self.error = error
            return False

    def _point(self, x) -> np.ndarray:
        return np.ctypeslib.as_array(x, (self.n,)).copy()

    def _write(self, out, values, size: int, what: str) -> bool:
        values = np.asarray(values, dtype=float).ravel()
        if values.size != size:
            raise ValueError(f"{what}: expected {size} values, got {values.size}")
        np.ctypeslib.as_array(out, (size,))[:] = values
        return True

    def _objective(self, n, x, new_x, value, user_data) -> bool:
        def evaluate():
            value[0] = float(self.obj.objective(self._point(x)))
            return True
        return self._guarded(evaluate)

    def _gradient(self, n, x, new_x, out, user_data) -> bool:
        return self._guarded(lambda: self._write(out, self.obj.gradient(self._point(x)), self.n, "gradient"))

    def _constraints(self, n, x, new_x, m, out, user_data) -> bool:
        return self._guarded(lambda: self._write(out, self.obj.constraints(self._point(x)), self.m, "constraints"))

    def _structure(self, what: str, size: int, rows, cols) -> bool:
        r, c = self.structure[what]
        np.ctypeslib.as_array(rows, (size,))[:], np.ctypeslib.as_array(cols, (size,))[:] = r, c
        return True

    def _jacobian(self, n, x, new_x, m, size, rows, cols, values, user_data) -> bool:
        if not values:
            return self._guarded(lambda: self._structure("jacobianstructure", size, rows, cols))
        return self._guarded(lambda: self._write(values, self.obj.jacobian(self._point(x)), size, "jacobian"))

    def _hessian(self, n, x, new_x, obj_factor, m, lam, new_lambda, size, rows, cols, values, user_data) -> bool:
        if not values:
            return self._guarded(lambda: self._structure("hessianstructure", size, rows, cols))
        return self._guarded(lambda: self._write(
            values, self.obj.hessian(self._point(x), np.ctypeslib.as_array(lam, (self.m,)).copy(), obj_factor),
            size, "hessian"))

    def _intermediate(self, alg_mod, iter_count, obj_value, inf_pr, inf_du, mu, d_norm, regularization_size,
                      alpha_du, alpha_pr, ls_trials, user_data) -> bool:
        if self.error is not None:
            return False
        return self._guarded(lambda: self.obj.intermediate(alg_mod, iter_count, obj_value, inf_pr, inf_du, mu, d_norm,
                                                           regularization_size, alpha_du, alpha_pr, ls_trials)
                             is not False)
