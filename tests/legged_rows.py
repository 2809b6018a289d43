"""A legged task with its contact-force constraint rows in newtons, as the tasks stated them
before they took the robot's weight as the rows' unit (for the tests that compare with then)."""
from __future__ import annotations

from optdyn import Problem
from optdyn.constraints import ResidualConstraint


def in_newtons(p: Problem) -> Problem:
    """``p`` with its stage constraints' residual rows r ≤ 0 unscaled (their unit the newton)."""
    assert p.stage_constraints and all(c.scale.max() > 1.0 for c in p.stage_constraints)  # the task's: scaled
    rows = [ResidualConstraint(c.residual, upper=0.0) for c in p.stage_constraints]
    return Problem(p.model, p.x0, p.N, p.dt, p.running_cost, p.terminal_cost, contacts=p.contacts,
                   path_constraints=rows, name=p.name, solver_options=p.solver_options)
