"""The gaits of the quadruped and biped tasks, with numpy alone (the Crocoddyl anchor of the
benchmarks, which runs without optdyn, builds the same gait from it): the timing of each
quadruped scenario (:func:`gait`) and of the biped's walk (:func:`biped_gait`), the
swing-foot arcs (:func:`swing_references`), Solo-12's standing posture and the tasks'
weights. :mod:`problems.quadruped` and :mod:`problems.biped` describe the tasks.
"""
from __future__ import annotations

import numpy as np

FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
STANDING = (0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6)
"""The legs' joints of the SRDF's ``standing`` state, in the model's order FL, FR, HL, HR."""
BASE_HEIGHT = 0.235
SOLES = ("left_sole_link", "right_sole_link")
"""Talos' sole frames (example-robot-data), the biped's two 6D contacts."""
SCENARIOS = ("walk", "trot", "jump")
SWINGS = {"walk": (("HL_FOOT",), ("FL_FOOT",), ("HR_FOOT",), ("FR_FOOT",)),
          "trot": (("FL_FOOT", "HR_FOOT"), ("FR_FOOT", "HL_FOOT"))}
WEIGHTS = {"base_position": 0.0, "base_height": 1e2, "base_orientation": 5e2, "joints": 1e-2, "velocity": 1.0,
           "control": 1e-1, "swing": 1e6, "terminal": 10.0, "cone": 0.1, "cone_width": 0.1}
BIPED_WEIGHTS = {**WEIGHTS, "base_position": 1e2, "control": 1e-3, "swing": 1e7}
"""The quadruped's, but for Talos (90 kg, knee torques near 100 N·m): the base's horizontal
position follows the walk (with none, the body lags behind the swinging sole and the
torques it saves straighten the knees), the torques weigh less and the soles land to 1 mm."""


def positive(value, name: str, integer: bool = False):
    """``value``, if a finite number > 0 (an integer if ``integer``); ValueError naming ``name``."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool) if integer else np.isfinite(value)
    if not ok or value <= 0:
        raise ValueError(f"{name}: expected {'an integer' if integer else 'a number'} > 0, got {value!r}")
    return value


def gait(scenario: str, cycles: int, step_knots: int, support_knots: int, dt: float = 0.02,
         step_height: float = 0.05) -> tuple[list[tuple[str, ...]], list[float]]:
    """(the swing feet of every interval, the fraction of the gait's forward progress reached
    at every knot 0 … N): the timing of ``scenario`` (:mod:`problems.quadruped`). A foot not in the
    swing tuple is in stance. ValueError for a parameter that leaves no stance phase."""
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario: expected one of {', '.join(SCENARIOS)}, got {scenario!r}")
    positive(cycles, "cycles", True)
    _check_knots(step_knots, support_knots)
    if scenario == "jump":
        if support_knots == 0:
            raise ValueError("support_knots: a jump needs stance phases to take off and land (≥ 1)")
        flight = max(1, int(round(np.sqrt(8.0 * step_height / 9.81) / dt)))
        return _timeline([((), support_knots), (FEET, flight), ((), support_knots)])
    return _timeline(_stepping([swing for _ in range(cycles) for swing in SWINGS[scenario]], step_knots,
                               support_knots))


def biped_gait(steps: int, step_knots: int, support_knots: int) -> tuple[list[tuple[str, ...]], list[float]]:
    """(the swinging sole of every interval, the fraction of the walk's forward progress
    reached at every knot 0 … N): ``support_knots`` on both soles, then ``steps`` single
    supports of ``step_knots`` intervals, the right sole swinging first and the soles
    alternating, each followed by ``support_knots`` on both (:mod:`problems.biped`)."""
    positive(steps, "steps", True)
    _check_knots(step_knots, support_knots)
    return _timeline(_stepping([(SOLES[1 - i % 2],) for i in range(steps)], step_knots, support_knots))


def _check_knots(step_knots, support_knots) -> None:
    """ValueError naming step_knots (an integer > 0) or support_knots (an integer ≥ 0)."""
    positive(step_knots, "step_knots", True)
    if isinstance(support_knots, bool) or not isinstance(support_knots, (int, np.integer)) or support_knots < 0:
        raise ValueError(f"support_knots: expected an integer ≥ 0, got {support_knots!r}")


def _stepping(sequence: list, step_knots: int, support_knots: int) -> list[tuple[tuple[str, ...], int]]:
    """The phases (swing feet, intervals) of the swings of ``sequence`` in turn, ``step_knots``
    each, with ``support_knots`` on every foot before the first and after each."""
    return [((), support_knots)] + [p for swing in sequence for p in ((swing, step_knots), ((), support_knots))]


def _timeline(phases: list) -> tuple[list[tuple[str, ...]], list[float]]:
    """(the swing feet of every interval, the progress at every knot) of ``phases``."""
    swings = [s for (s, n) in phases for _ in range(n)]
    moving = np.array([bool(s) for s in swings])  # the body advances while feet swing (or fly)
    progress = np.r_[0.0, np.cumsum(moving / moving.sum())]
    return swings, list(progress)


def swing_references(p0: np.ndarray, foot: str, swings: list, length: float, height: float,
                     weight: float = WEIGHTS["swing"]) -> tuple[np.ndarray, np.ndarray]:
    """(N, 3) targets and (N,) weights of ``foot``'s position (from ``p0``) at the running
    knots: the arc p + (s·length, 0, 4·height·s(1 − s)), s = j/n at the j-th of its n swing
    knots, of every swing phase up to and including its touchdown knot, each landing
    ``length`` further forward; ``weight`` there, 0 elsewhere."""
    N = len(swings)
    target, weights = np.zeros((N, 3)), np.zeros(N)
    p = np.array(p0, dtype=float)
    k = 0
    while k < N:
        if foot not in swings[k]:
            target[k] = p
            k += 1
            continue
        n = next((j for j in range(k, N) if foot not in swings[j]), N) - k
        for j in range(1, n + 1):
            if k + j < N:
                s = j / n
                target[k + j] = p + (s * length, 0.0, 4.0 * height * s * (1.0 - s))
                weights[k + j] = weight
        p = p + (length, 0.0, 0.0)
        k += n
    return target, weights
