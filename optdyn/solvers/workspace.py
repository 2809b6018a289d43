"""The arrays of DDP/iLQR iterations, kept between solves of problems of one size."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from dynamics.parallel import UNMARKED, Ahead, get_num_threads

from ..ocp.problem import Problem
from .riccati import SECOND_ORDER

Following = namedtuple("Following", ["problem", "mode", "xs", "us", "ahead", "finish"])
"""A linearisation begun ahead (:meth:`Workspace.follow`): of ``problem`` in ``mode`` at the
trial arrays (xs, us), on ``ahead`` (:class:`dynamics.parallel.Ahead`), joined by ``finish``
(which makes its contact forces the problem's)."""


class Workspace:
    """The arrays of DDP/iLQR iterations on a problem of N intervals, written in place by
    every solve given this workspace instead of allocated afresh: the feed-forward k (N, nu)
    and feedback K (N, nu, ndx) of the backward pass and its step's path in the model
    (``path``), the iterate and
    the forward pass's trial trajectories (``xs``, ``us``: three of each, for the iterate, the
    trial and the rollout begun ahead of it, which change roles as steps are tried and
    accepted; ``ahead``: the last rollout begun ahead, :meth:`settle`), the contracted second-order terms' stage records (``stages``: megabytes for
    long horizons, made by DDP's first expansion), the dynamics' and the cost's expansions
    (``linearization``, :meth:`expansion`; the last linearization is held with the trajectory
    it was made at, :meth:`linearization_at`, and a spare set that the linearisation begun
    behind a line search's rollout or :class:`optdyn.MPC`'s warm start writes, :meth:`follow`) and the last finite rollout of a problem's
    x0 (:meth:`rollout_of`), so that controls rolled out once — to check the initial guess, or
    by the caller (:class:`optdyn.MPC`'s feedback-policy warm start) — are not rolled out
    again; on an augmented Lagrangian, the dynamics' curvature of DDP's last exact pass
    (:meth:`curvatures`). A solve's result has arrays of its own. A controller solving one horizon after
    another of the same size keeps one (:class:`optdyn.MPC`); :meth:`fits` says whether it
    serves a problem."""

    def __init__(self, problem: Problem) -> None:
        if not isinstance(problem, Problem):
            raise ValueError(f"problem: expected an optdyn.Problem, got {type(problem).__name__}")
        N, nx, nu, ndx = self.size = (problem.N, problem.nx, problem.nu, problem.ndx)
        self.k, self.K = np.zeros((N, nu)), np.zeros((N, nu, ndx))
        self.path = np.empty((N + 1, ndx + nu))  # a step's path in the model (riccati.linear_path)
        self.k_plain, self.K_plain = np.empty((N, nu)), np.empty((N, nu, ndx))  # RiccatiSolver.step_on's first step
        self.xs = tuple(np.empty((N + 1, nx)) for _ in range(3))
        self.us = tuple(np.empty((N, nu)) for _ in range(3))
        self.ahead = None
        self.free, self.no_gaps = (np.full(nu, -np.inf), np.full(nu, np.inf)), np.zeros((0, ndx))
        self.stages = problem.no_stages
        self._rolled = (None, np.empty(nx), np.empty((N, nu)), np.empty((N + 1, nx)))  # dynamics, x0, us, xs
        self._expansions = [problem.expansion_arrays(N), None]
        self.linearization = problem.linearization_arrays(N)
        self._linearized = (None, -1, np.empty((N + 1, nx)), np.empty((N, nu)), None)  # problem, mode, xs, us, result
        self._spare = None  # (linearization arrays, stage records or None) a linearisation begun ahead writes into
        self._following: Following | None = None
        self._curvatures: np.ndarray | None = None
        self._curvature_at = (None, np.empty((N + 1, nx)), np.empty((N, nu)))  # dynamics, xs, us

    def curvatures(self) -> np.ndarray:
        """The dynamics' curvature V'_x·F_zz (N, nz, nz) of each knot as DDP's last exact pass
        formed it (:data:`~optdyn.solvers.riccati.SecondOrder`'s ``Hz``), made on first use."""
        if self._curvatures is None:
            N, _, nu, ndx = self.size
            self._curvatures = np.empty((N, ndx + nu, ndx + nu))
        return self._curvatures

    def curvature_formed(self, dynamics, xs: np.ndarray, us: np.ndarray) -> None:
        """A pass formed :meth:`curvatures` on every knot of the interval ``dynamics``
        linearised at (xs, us)."""
        _, held_xs, held_us = self._curvature_at
        held_xs[:], held_us[:] = xs, us
        self._curvature_at = (dynamics, held_xs, held_us)

    def curvature_current(self, dynamics, xs: np.ndarray, us: np.ndarray) -> bool:
        """Whether :meth:`curvatures` were formed along ``dynamics`` at (xs, us) (the next pass
        there may take them: only its cost terms changed, as when the augmented Lagrangian's
        multipliers move at the iterate an inner solve ended at)."""
        held, held_xs, held_us = self._curvature_at
        return held is dynamics and np.array_equal(held_xs, xs) and np.array_equal(held_us, us)

    def settle(self, start: tuple | None = None) -> None:
        """Return once no rollout or linearisation begun ahead (:meth:`optdyn.solvers.ddp.RiccatiSolver.search`)
        writes into these arrays any more — but a linearisation that follows the arrays of
        :meth:`iterate` while they hold ``start`` (xs, us), bit for bit: a solve starting where
        :class:`optdyn.MPC`'s warm start rolled out into them, its linearisation following."""
        if self.ahead is not None:
            self.ahead.settle()
            self.ahead = None
        f = self._following
        if f is None:
            return
        if start is None or f.xs is not self.xs[0] or f.us is not self.us[0] \
                or not (np.array_equal(f.xs, start[0]) and np.array_equal(f.us, start[1])):
            self.unfollow()

    def iterate(self) -> tuple[np.ndarray, np.ndarray]:
        """The arrays (xs, us) a solve's first iterate is made in
        (:meth:`optdyn.solvers.ddp.RiccatiSolver.start`)."""
        return self.xs[0], self.us[0]

    def follow(self, problem: Problem, xs: np.ndarray, us: np.ndarray, mode: int) -> np.ndarray:
        """Begin the linearisation in ``mode`` (:data:`~optdyn.solvers.riccati.SECOND_ORDER`:
        first order alone, or with the stage records) at the trial (xs, us) that a forward pass
        is about to write, following it on a pool thread
        (:meth:`optdyn.Problem.linearization_ahead`) into spare arrays, its contact forces kept
        apart until it is joined; returns the claims the forward pass marks its knots in. :meth:`followed`
        takes it if the trial is the next iterate, :meth:`unfollow` drops it. On one thread, or
        in the tensor mode, nothing is begun: the claims returned are unmarked."""
        self.unfollow()
        if get_num_threads() < 2 or mode >= SECOND_ORDER["tensor"]:
            return UNMARKED
        if self._spare is None:
            self._spare = (problem.linearization_arrays(problem.N), None)
        out, stages = self._spare
        ahead = Ahead(problem.N)
        finish = problem.linearization_ahead(xs[:-1], us, ahead, out, mode == SECOND_ORDER["contracted"], stages)
        self._following = Following(problem, mode, xs, us, ahead, finish)
        return ahead.claims

    def unfollow(self) -> None:
        """Drop the linearisation begun ahead, if any, once no thread writes its arrays."""
        if self._following is not None:
            self._following.ahead.cancel()
            self._following = None

    def followed(self, problem: Problem, xs: np.ndarray, us: np.ndarray, mode: int) -> tuple | None:
        """(A, B) of the linearisation begun ahead (:meth:`follow`), joined, if it was begun
        for these arrays (the same objects: the accepted trial) of ``problem`` in ``mode``: its
        arrays and stage records become this workspace's, its contact forces the problem's;
        else None (dropping one begun for another trial)."""
        f = self._following
        if f is None:
            return None
        if not (f.problem is problem and f.mode == mode and f.xs is xs and f.us is us):
            self.unfollow()
            return None
        self._following = None
        A, B, stages = f.finish()
        out, spare_stages = self._spare
        if stages is not None:  # the records written become the workspace's
            self.stages, spare_stages = stages, self.stages
        self._spare, self.linearization = (self.linearization, spare_stages), out
        return A, B

    def expansion(self, i: int) -> tuple[np.ndarray, ...]:
        """The cost expansion's arrays (:meth:`optdyn.Problem.running_cost_terms`): the exact
        model's (``i`` = 0) or the Gauss–Newton fallback's (1, made when first asked for)."""
        if self._expansions[i] is None:
            self._expansions[i] = tuple(np.zeros_like(a) for a in self._expansions[0])
        return self._expansions[i]

    def fits(self, problem: Problem) -> bool:
        """Whether ``problem`` has this workspace's N, nx, nu and ndx."""
        return self.size == (problem.N, problem.nx, problem.nu, problem.ndx)

    def remember(self, problem: Problem, us: np.ndarray, xs: np.ndarray) -> None:
        """Note that ``xs`` (N+1, nx), all finite, are the states of ``us`` (N, nu) from the
        problem's x0 under its dynamics (a copy is kept)."""
        _, x0, rolled_us, rolled_xs = self._rolled
        x0[:], rolled_us[:], rolled_xs[:] = problem.x0, us, xs
        self._rolled = (problem.dynamics, x0, rolled_us, rolled_xs)

    def is_rollout(self, problem: Problem, us: np.ndarray, xs: np.ndarray) -> bool:
        """Whether ``xs`` are the remembered states of ``us`` (:meth:`rollout_of`, bit for bit):
        then they close every multiple-shooting gap by construction."""
        rolled = self.rollout_of(problem, us)
        return rolled is not None and np.array_equal(rolled, xs)

    def linearization_at(self, problem: Problem, xs: np.ndarray, us: np.ndarray, mode: int) -> tuple | None:
        """The linearization last held (:meth:`hold_linearization`) if it was made of
        ``problem`` in ``mode`` at (xs, us), bit for bit; else None."""
        held, held_mode, held_xs, held_us, result = self._linearized
        if held is problem and held_mode == mode and np.array_equal(held_xs, xs) and np.array_equal(held_us, us):
            return result
        return None

    def linearized_mode(self) -> int | None:
        """The mode the last linearisation held was made in (:meth:`hold_linearization`; the
        solver's, :meth:`~optdyn.solvers.ddp.RiccatiSolver.expansion_mode`), None before any."""
        mode = self._linearized[1]
        return None if mode < 0 else mode

    def hold_linearization(self, problem: Problem, xs: np.ndarray, us: np.ndarray, mode: int, result: tuple) -> None:
        """Note that ``result`` (in this workspace's arrays) is the linearization of ``problem``
        in ``mode`` at (xs, us) (copies of them are kept), until another is held."""
        _, _, held_xs, held_us, _ = self._linearized
        held_xs[:], held_us[:] = xs, us
        self._linearized = (problem, mode, held_xs, held_us, result)

    def rollout_of(self, problem: Problem, us: np.ndarray) -> np.ndarray | None:
        """The remembered states of ``us`` if they are those of :meth:`remember` (the same
        dynamics object, x0 and controls, bit for bit), else None."""
        dynamics, x0, rolled_us, rolled_xs = self._rolled
        if dynamics is problem.dynamics and np.array_equal(x0, problem.x0) and np.array_equal(rolled_us, us):
            return rolled_xs
        return None
