"""Results and closed loops on disk: one ``.npz`` file per :class:`~optdyn.solvers.result.Result`
or :class:`~optdyn.apps.simulate.ClosedLoop`.

Layout of the archive (read with ``np.load(path, allow_pickle=False)``)::

    meta            0-d unicode string: JSON {"format": "optdyn.result", "version": 2,
                    cost, converged, iterations, status, message, solver, problem,
                    params, wall_time, extra (JSON-able entries), history (names),
                    extra_arrays (names)}
    xs (N+1, nx), us (N, nu), gains (N, nu, ndx) if any (ndx = nx, or 2·nv on a floating base)
    history/<name>  one array per history entry
    extra/<name>    array-valued entries of ``extra`` (multipliers, ...)

Entries of ``extra`` that are neither numeric arrays nor JSON values are stored as their
``repr`` string. A result that carries its problem (``result.source``, set by
:func:`optdyn.solve`) also stores ``extra["problem_record"]``: the model's URDF path and
the task (:func:`optdyn.ocp.task.record`), from which :func:`optdyn.ocp.task.problem_of`
rebuilds the problem to draw, plot and check a custom problem's result, and
``extra["joint_names"]``: the model's joints in the order of q, v and u.

Version 2 is the first whose joints follow Pinocchio's order (by name at every branching
of the tree); version 1 files followed the order of the URDF's declarations, which swaps
legs of robots such as HyQ and ANYmal, and record no joint names to map them by: they are
refused, saying so (solve again to save them anew). Anything else that is
not such a file — missing, truncated, corrupt, another program's npz — makes
:func:`load_result` raise ``ValueError`` saying what is wrong.

A closed loop (:func:`save_closed_loop`, :func:`load_closed_loop`) is an archive of the
same family::

    meta            JSON {"format": "optdyn.closed_loop", "version": 2, dt, stopped, solver,
                    iteration_limit, warm_start, horizon, problem, params, status (one per step),
                    disturbances (frame, force, start, duration of each push),
                    problem_record (or null), joint_names (or null), plant ("optdyn" or
                    "mujoco"), contact_frames (the feet whose measured forces follow)}
    contact_forces/<frame> (n, 3)   the plant's measured contact forces (MuJoCo's), if any
    t (n+1,), xs (n+1, nx), us (n, nu), gains (n, nu, ndx), solve_time (n,), cost (n,),
    margins (n, m), iterations (n,)

Its problem is found as a result's: by name and params in the registry, else from the record.
"""
from __future__ import annotations

import json
import os
import zipfile
import zlib
from collections.abc import Callable

import numpy as np

from ..ocp.problem import Problem
from ..solvers.result import Result
from ..ocp.task import record
from .simulate import ClosedLoop, Push

FORMAT, VERSION = "optdyn.result", 2
CLOSED_LOOP_FORMAT = "optdyn.closed_loop"
_SCALARS = {"cost": float, "converged": bool, "iterations": int, "status": str, "message": str,
            "solver": str, "problem": str, "wall_time": float}
_LOOP_ARRAYS = {"t": float, "xs": float, "us": float, "gains": float, "solve_time": float, "cost": float,
                "margins": float, "iterations": np.int64}
_LOOP_SCALARS = ("dt", "stopped", "solver", "iteration_limit", "warm_start", "horizon", "problem")


def _jsonable(x):
    """JSON-compatible copy of x (numpy scalars/arrays → numbers/lists), else TypeError."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    raise TypeError(f"not JSON-serialisable: {type(x).__name__}")


def _is_numeric_array(x) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind in "biuf"


def _problem_record(problem: Problem | None, extra: dict) -> dict | None:
    """The problem record to store: the one already in ``extra``, else that of ``problem``."""
    if "problem_record" in extra:
        return extra["problem_record"]
    return record(problem) if isinstance(problem, Problem) else None


def _joint_names(problem: Problem | None, extra: dict) -> list[str] | None:
    """The joint names to store: those already in ``extra``, else those of ``problem``'s model."""
    if "joint_names" in extra:
        return list(extra["joint_names"])
    return list(problem.model.joint_names) if isinstance(problem, Problem) else None


def save_result(result: Result, path) -> None:
    """Write ``result`` to ``path`` (an ``.npz`` archive, written as named; no pickles)."""
    if not isinstance(result, Result):
        raise ValueError(f"result: expected an optdyn Result, got {type(result).__name__}")
    arrays = {"xs": np.asarray(result.xs, dtype=float), "us": np.asarray(result.us, dtype=float)}
    if result.gains is not None:
        arrays["gains"] = np.asarray(result.gains, dtype=float)
    for name, values in result.history.items():
        arrays[f"history/{name}"] = np.asarray(values)
    extra, extra_arrays = {}, []
    items = dict(result.extra)
    for name, value in (("problem_record", _problem_record(result.source, items)),
                        ("joint_names", _joint_names(result.source, items))):
        if value is not None:
            items[name] = value
    for name, value in items.items():
        if _is_numeric_array(value):
            arrays[f"extra/{name}"] = value
            extra_arrays.append(name)
            continue
        try:
            extra[name] = _jsonable(value)
        except TypeError:
            extra[name] = repr(value)
    try:
        params = _jsonable(result.params)
    except TypeError as e:
        raise ValueError(f"result.params: cannot be saved ({e}); use numbers, strings, lists, arrays") from None
    meta = {"format": FORMAT, "version": VERSION, "params": params, "extra": extra,
            "history": list(result.history), "extra_arrays": extra_arrays}
    meta.update({k: _jsonable(getattr(result, k)) for k in _SCALARS})
    arrays["meta"] = np.array(json.dumps(meta, allow_nan=True))
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)


def _meta(archive, path, fmt: str = FORMAT, required=(*_SCALARS, "params", "extra", "history", "extra_arrays"),
          what: str = "result") -> dict:
    if "meta" not in archive.files:
        raise ValueError(f"{path}: not an optdyn {what} file (no 'meta' entry; found {archive.files[:5]})")
    try:
        meta = json.loads(str(archive["meta"][()]))
    except (ValueError, TypeError) as e:
        raise ValueError(f"{path}: corrupt {what} metadata ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        found = meta.get("format") if isinstance(meta, dict) else meta
        other = {FORMAT: "; it is a result: optdyn.load_result reads it",
                 CLOSED_LOOP_FORMAT: "; it is a closed loop: optdyn.load_closed_loop reads it"}.get(found, "")
        raise ValueError(f"{path}: not an optdyn {what} file (format {found!r}){other}")
    if meta.get("version") == 1:
        raise ValueError(f"{path}: {what} file version 1, written when joints followed the order of the URDF's "
                         "declarations; this optdyn orders them as Pinocchio does (by name at every branching, "
                         "version 2) and the file records no joint names to map them: solve again and save anew")
    if meta.get("version") != VERSION:
        raise ValueError(f"{path}: {what} file version {meta.get('version')!r}, this optdyn reads version {VERSION}")
    missing = [k for k in required if k not in meta]
    if missing:
        raise ValueError(f"{path}: corrupt {what} metadata, missing {missing}")
    return meta


def _arrays(archive, meta: dict, path) -> dict:
    names = ["xs", "us", *(f"history/{h}" for h in meta["history"]), *(f"extra/{e}" for e in meta["extra_arrays"])]
    names += ["gains"] if "gains" in archive.files else []
    missing = [n for n in names if n not in archive.files]
    if missing:
        raise ValueError(f"{path}: corrupt result file, missing arrays {missing}")
    arrays = {n: archive[n] for n in names}
    xs, us = arrays["xs"], arrays["us"]
    if xs.ndim != 2 or us.ndim != 2 or xs.shape[0] != us.shape[0] + 1:
        raise ValueError(f"{path}: corrupt result file, xs {xs.shape} and us {us.shape} are not (N+1, nx), (N, nu)")
    gains = arrays.get("gains")
    if gains is not None and (gains.shape[:2] != us.shape or gains.ndim != 3
                              or not 0 < gains.shape[2] <= xs.shape[1]):  # (N, nu, ndx), ndx ≤ nx
        raise ValueError(f"{path}: corrupt result file, gains {gains.shape} do not match xs {xs.shape}, us {us.shape}")
    return arrays


def _read(path, read: Callable):
    """``read(archive)`` of the npz archive at ``path``; ValueError naming ``path`` if it is
    missing, not an npz archive or corrupt (``read``'s own ValueErrors start with the path)."""
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such file")
    with open(path, "rb") as f:
        if f.read(4) != b"PK\x03\x04":
            raise ValueError(f"{path}: not an npz archive (no zip signature at the start)")
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path}: not an npz archive ({e})") from None
    try:
        return read(archive)
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error, KeyError, TypeError) as e:
        raise ValueError(f"{path}: corrupt npz archive ({type(e).__name__}: {e})") from None
    except ValueError as e:
        if str(e).startswith(f"{path}:"):
            raise
        raise ValueError(f"{path}: corrupt npz archive ({e})") from None
    finally:
        archive.close()


def _result(archive, path) -> Result:
    meta = _meta(archive, path)
    arrays = _arrays(archive, meta, path)
    scalars = {k: cast(meta[k]) for k, cast in _SCALARS.items()}
    extra = dict(meta["extra"])
    extra.update({e: arrays[f"extra/{e}"] for e in meta["extra_arrays"]})
    return Result(
        xs=arrays["xs"], us=arrays["us"], history={h: arrays[f"history/{h}"] for h in meta["history"]},
        params=meta["params"], gains=arrays.get("gains"), extra=extra, **scalars,
    )


def load_result(path) -> Result:
    """Read a result written by :func:`save_result`; ValueError if ``path`` is not one."""
    return _read(path, lambda archive: _result(archive, path))


# ------------------------------------------------------------------------ closed loops

def save_closed_loop(loop: ClosedLoop, path) -> None:
    """Write the closed loop ``loop`` (:func:`optdyn.simulate`) to ``path``, an ``.npz``
    archive like a result's (module docstring), written as named; no pickles."""
    if not isinstance(loop, ClosedLoop):
        raise ValueError(f"loop: expected an optdyn ClosedLoop, got {type(loop).__name__}")
    arrays = {name: np.asarray(getattr(loop, name), dtype=dtype) for name, dtype in _LOOP_ARRAYS.items()}
    try:
        params = _jsonable(loop.params)
    except TypeError as e:
        raise ValueError(f"loop.params: cannot be saved ({e}); use numbers, strings, lists, arrays") from None
    meta = {"format": CLOSED_LOOP_FORMAT, "version": VERSION, "params": params,
            "status": list(loop.status), "problem_record": _problem_record(loop.source, loop.extra),
            "joint_names": _joint_names(loop.source, loop.extra),
            "disturbances": [{"frame": d.frame, "force": list(d.force), "start": d.start, "duration": d.duration}
                             for d in loop.disturbances]}
    meta.update({k: _jsonable(getattr(loop, k)) for k in _LOOP_SCALARS})
    meta["plant"], meta["contact_frames"] = loop.plant, list(loop.contact_forces)
    arrays.update({f"contact_forces/{frame}": np.asarray(f, dtype=float) for frame, f in loop.contact_forces.items()})
    arrays["meta"] = np.array(json.dumps(meta, allow_nan=True))
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)


def _loop_arrays(archive, path) -> dict:
    missing = [n for n in _LOOP_ARRAYS if n not in archive.files]
    if missing:
        raise ValueError(f"{path}: corrupt closed-loop file, missing arrays {missing}")
    a = {n: archive[n] for n in _LOOP_ARRAYS}
    n = a["us"].shape[0] if a["us"].ndim == 2 else -1
    shapes_ok = (n >= 0 and a["xs"].ndim == 2 and a["xs"].shape[0] == n + 1 and a["t"].shape == (n + 1,)
                 and a["gains"].ndim == 3 and a["gains"].shape[:2] == a["us"].shape
                 and a["margins"].ndim == 2 and a["margins"].shape[0] == n
                 and all(a[k].shape == (n,) for k in ("solve_time", "cost", "iterations")))
    if not shapes_ok:
        raise ValueError(f"{path}: corrupt closed-loop file, array shapes "
                         f"{ {k: v.shape for k, v in a.items()} } do not fit n steps (t, xs: n + 1 rows)")
    return a


def load_closed_loop(path) -> ClosedLoop:
    """Read a closed loop written by :func:`save_closed_loop`; ValueError if ``path`` is not one.

    The problem is not rebuilt here: :func:`optdyn.ocp.task.problem_of` finds it from the
    loop's name and params (a registered problem) or its ``extra["problem_record"]``."""
    return _read(path, lambda archive: _closed_loop(archive, path))


def _closed_loop(archive, path) -> ClosedLoop:
    meta = _meta(archive, path, CLOSED_LOOP_FORMAT,
                 (*_LOOP_SCALARS, "params", "status", "problem_record", "joint_names", "disturbances"),
                 "closed-loop")
    arrays = _loop_arrays(archive, path)
    pushes = tuple(Push(d["frame"], tuple(d["force"]), d["start"], d["duration"]) for d in meta["disturbances"])
    extra = {k: meta[k] for k in ("problem_record", "joint_names") if meta[k] is not None}
    frames = meta.get("contact_frames", [])  # (files before the MuJoCo plant have none)
    missing = [f for f in frames if f"contact_forces/{f}" not in archive.files]
    if missing:
        raise ValueError(f"{path}: corrupt closed-loop file, missing the contact forces of {missing}")
    forces = {f: archive[f"contact_forces/{f}"] for f in frames}
    return ClosedLoop(**arrays, status=[str(s) for s in meta["status"]], disturbances=pushes,
                      params=meta["params"], extra=extra, plant=str(meta.get("plant", "optdyn")),
                      contact_forces=forces, **{k: meta[k] for k in _LOOP_SCALARS})


def load(path) -> Result | ClosedLoop:
    """The result or the closed loop ``path`` holds (:func:`load_result`,
    :func:`load_closed_loop`); ValueError if it holds neither."""
    def read(archive):
        try:
            found = json.loads(str(archive["meta"][()])).get("format")
        except (KeyError, ValueError, TypeError, AttributeError):
            found = None  # the result reader says what is wrong
        return (_closed_loop if found == CLOSED_LOOP_FORMAT else _result)(archive, path)

    return _read(path, read)
