"""A legged task with its contact-force constraint rows in newtons, as the tasks stated them
before they took the robot's weight as the rows' unit (for the tests that compare with then)."""
from __future__ import annotations

from optdyn import Problem
from problems.legged import in_newtons as unscaled


def in_newtons(p: Problem) -> Problem:
    """``p`` with its stage constraints' residual rows r ≤ 0 unscaled (their unit the newton)."""
    assert p.stage_constraints and all(c.scale.max() > 1.0 for c in p.stage_constraints)  # the task's: scaled
    return unscaled(p)
