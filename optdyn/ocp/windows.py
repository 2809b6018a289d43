"""Windows of a problem: some of its intervals as a problem of their own.

A model predictive controller solves, at each control instant, the next n intervals of a
task from the measured state (Tassa, Erez & Todorov 2012; Crocoddyl's users shift a list of
action models the same way). Where the task's data vary along its intervals — references
one per knot (a trajectory to track, a moving target), weights one per knot (a swing
foot's), a contact sequence, external forces one set per interval — the window of intervals
``rows`` (an index array into the task's intervals 0 … N−1) takes those rows: its interval j
is the task's interval rows[j], and its node j + 1 the task's node rows[j] + 1 (path
constraints and guesses). Past the task's end a window repeats its last interval (the task
goes on as it ended: its last reference, weights, contacts and forces held). The terminal
cost and the terminal constraints are the task's, at the window's last node: where they give
one reference (or weight) per node 0 … N, the row of that node (:func:`terminal_nodes`), so
that a horizon ending mid-task is pulled to the trajectory, not to the task's end.

With contacts, a window's interval j starts with the impulse map where the task's interval
rows[j] does — at j = 0 too: the state a controller measures at a touchdown is node rows[0]
of the task, the state before the impulse (:func:`optdyn.simulate`'s plant applies it after
the measurement), and the impulse map of a state already at rest on its contacts is the
identity (restitution 0: v⁺ = v where J v = 0). A repeated interval gains no contacts.
"""
from __future__ import annotations

import copy

import numpy as np

from .contact_phases import at_rows
from .costs import Sum, cost_terms
from .residual_costs import ResidualCost
from .residuals import Residual


def interval_rows(N: int, start: int, n: int) -> np.ndarray:
    """(n,) the task's intervals start … start + n − 1, the last one (N − 1) repeated past its end."""
    return np.minimum(np.arange(start, start + n, dtype=np.int64), N - 1)


def windowed_term(term, rows: np.ndarray, knots: int | None = None):
    """A cost or constraint ``term`` at the intervals ``rows``: the same object if none of its
    data vary per knot, else a copy whose residuals (:meth:`~optdyn.ocp.residuals.Residual.window`)
    and per-knot weights take those rows — with ``knots``, only those with that many rows."""
    if term is None:
        return None
    if isinstance(term, Sum):
        parts = [(w, windowed_term(c, rows, knots)) for w, c in term.terms]
        return term if all(c is d for (_, c), (_, d) in zip(term.terms, parts)) else Sum(parts)
    residual = getattr(term, "residual", None)
    if not isinstance(residual, Residual):
        return term  # a term without residuals: the same at every knot
    timed = knots is None or residual.knots() == knots
    window = residual.window(rows) if timed else residual
    weighted = isinstance(term, ResidualCost) and term.weight.ndim == 1 and knots in (None, term.weight.size)
    if window is residual and not weighted:
        return term
    out = copy.copy(term)
    out.residual = window
    if weighted:
        out.weight = term.weight[rows]
    return out


def _per_node(term, nodes: int) -> bool:
    """Whether a cost or constraint gives one reference or weight per node (``nodes`` rows)."""
    return any(r.knots() == nodes for r in term.residuals()) or any(
        isinstance(c, ResidualCost) and c.weight.ndim == 1 and c.weight.size == nodes for c in cost_terms(term))


def terminal_nodes(terminal_cost, terminal_constraints: tuple, N: int) -> tuple | None:
    """(terminal cost, terminal constraints as given, N + 1) if any of them gives one reference
    or weight per node 0 … N, else None (module docstring)."""
    terms = [t for t in (terminal_cost, *terminal_constraints) if t is not None]
    per_node = any(_per_node(t, N + 1) for t in terms)
    return (terminal_cost, tuple(terminal_constraints), N + 1) if per_node else None


def terminal_at(nodes: tuple, node: int) -> tuple:
    """(terminal cost, terminal constraints) of :func:`terminal_nodes` at ``node`` of the N + 1."""
    at, n = np.array([node], dtype=np.int64), nodes[2]
    return windowed_term(nodes[0], at, n), tuple(windowed_term(c, at, n) for c in nodes[1])


def window(problem, rows: np.ndarray):
    """The :class:`~optdyn.ocp.problem.Problem` of the intervals ``rows`` of ``problem``
    (module docstring), its x0 the problem's if rows[0] = 0, else the guess's state at node
    rows[0]; shares the compiled dynamics."""
    rows = np.asarray(rows, dtype=np.int64)
    out = copy.copy(problem)
    out.N = rows.size
    nodes = np.concatenate([rows, rows[-1:] + 1])
    out.xs_init, out.us_init = problem.xs_init[nodes], problem.us_init[rows]
    out.x0 = problem.x0.copy() if rows[0] == 0 else out.xs_init[0].copy()
    out.running_cost = windowed_term(problem.running_cost, rows)
    if problem.terminal_nodes is not None:  # (a window's own windows end at its node N's references)
        out.terminal_cost, out.terminal_constraints = terminal_at(problem.terminal_nodes, int(rows[-1]) + 1)
        out.terminal_nodes = None
    out.path_constraints = tuple(windowed_term(c, rows) for c in problem.path_constraints)
    out.stage_constraints = tuple(windowed_term(c, rows) for c in problem.stage_constraints)
    if problem.f_ext.shape[0] > 1:
        out.f_ext = np.ascontiguousarray(problem.f_ext[rows])
        out.dynamics = problem.dynamics._replace(f_ext=out.f_ext)
    if problem.contacts is not None:
        out.contacts = [problem.contacts[k] for k in rows]
        out.dynamics = at_rows(problem.dynamics, rows)
        out._watch_forces()
    return out
