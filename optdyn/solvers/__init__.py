"""Solvers of the discrete problem of :mod:`optdyn.ocp`, as types that own their options:
:class:`DDP`, :class:`ILQR` and their feasibility-driven forms :class:`FDDP`, :class:`FILQR`
(one iteration, :class:`RiccatiSolver`, on the Riccati recursion of :mod:`.riccati`), the
augmented Lagrangian around them or, in :class:`ALDDP`, :class:`ALILQR`, :class:`ALFDDP`,
:class:`ALFILQR`, inside their iteration (:mod:`.bcl`), :class:`IPOPT` (direct multiple shooting), :func:`solve`
and its :class:`Result`."""
from .bcl import ALDDP, ALFDDP, ALFILQR, ALILQR
from .ddp import DDP, FDDP, FILQR, ILQR, RiccatiSolver


def __getattr__(name: str):
    """``IPOPT`` imports cyipopt on first access only."""
    if name == "IPOPT":
        from .ipopt import IPOPT
        return IPOPT
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ALDDP", "ALFDDP", "ALFILQR", "ALILQR", "DDP", "FDDP", "FILQR", "ILQR", "IPOPT", "RiccatiSolver"]
