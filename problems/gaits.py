"""The gaits of the legged tasks, with numpy alone (the Crocoddyl anchor of the benchmarks,
which runs without optdyn, builds the same gait from it): the timing of each quadruped
scenario (:func:`gait`) and of the biped's walk (:func:`biped_gait`) for any robot's feet, the
swing-foot arcs (:func:`swing_references`), and the tasks' weights with the rule that carries
them from the robot they were tuned on to another (:func:`scaled_weights`).
:mod:`problems.quadruped` and :mod:`problems.biped` describe the tasks.
"""
from __future__ import annotations

import numpy as np

FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
"""Solo-12's feet, the quadruped's default, in the order every quadruped's feet are given:
left front, right front, left hind, right hind."""
SOLES = ("left_sole_link", "right_sole_link")
"""Talos' sole frames (example-robot-data), the biped's default two 6D contacts (left, right)."""
SCENARIOS = ("walk", "trot", "jump")
TURNS = {"walk": ((2,), (0,), (3,), (1,)), "trot": ((0, 3), (1, 2))}
"""The feet that swing together, in turn, by their place in (left front, right front, left
hind, right hind): the walk's left hind, left front, right hind, right front; the trot's
diagonal pairs."""
WEIGHTS = {"base_position": 0.0, "base_height": 1e2, "base_orientation": 5e2, "joints": 1e-2, "velocity": 1.0,
           "control": 1e-1, "swing": 1e6, "terminal": 10.0, "cone": 0.1, "cone_width": 0.1}
"""The quadruped's weights, tuned on Solo-12 (:data:`SOLO_SCALE`)."""
BIPED_WEIGHTS = {**WEIGHTS, "base_position": 1e2, "control": 1e-3, "swing": 1e7}
"""The quadruped's, but for Talos (90 kg, knee torques near 100 N·m; :data:`TALOS_SCALE`): the
base's horizontal position follows the walk (with none, the body lags behind the swinging sole
and the torques it saves straighten the knees), the torques weigh less and the soles land to 1 mm."""
SOLO_SCALE = (2.5000027900000004, 0.2158972482691705)
"""Solo-12's (mass in kg, height of its base above its feet in m) standing in its SRDF's
``standing`` posture, as :func:`problems.legged.stance` measures them."""
TALOS_SCALE = (90.27219199999998, 1.0192720229567027)
"""Talos' (mass in kg, height of its base above its soles in m) in its SRDF's ``half_sitting``."""
LENGTHS = ("base_position", "base_height", "swing")
"""The weights of squared lengths (m⁻²)."""


def scaled_weights(weights: dict, scale: tuple[float, float], reference: tuple[float, float]) -> dict:
    """``weights`` tuned on a robot of ``reference`` (mass m₀ in kg, base height h₀ in m) for
    a robot of ``scale`` (m, h): each term keeps its share of the cost if lengths scale with
    the height, forces with the weight and torques with both. The weights of squared lengths
    (:data:`LENGTHS`) are multiplied by (h₀/h)², that of squared torques by (m₀h₀ / (mh))², the
    barrier's width (N) by m/m₀; angles, rates and the rest are kept. The reference robot
    itself gets ``weights`` exactly."""
    (m, h), (m0, h0) = scale, reference
    out = dict(weights)
    for name in LENGTHS:
        out[name] = weights[name] * (h0 / h) ** 2
    out["control"] = weights["control"] * (m0 * h0 / (m * h)) ** 2
    out["cone_width"] = weights["cone_width"] * (m / m0)
    return out


def positive(value, name: str, integer: bool = False):
    """``value``, if a finite number > 0 (an integer if ``integer``); ValueError naming ``name``."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool) if integer else np.isfinite(value)
    if not ok or value <= 0:
        raise ValueError(f"{name}: expected {'an integer' if integer else 'a number'} > 0, got {value!r}")
    return value


def gait(scenario: str, cycles: int, step_knots: int, support_knots: int, dt: float = 0.02,
         step_height: float = 0.05, feet: tuple[str, str, str, str] = FEET) -> tuple[list[tuple[str, ...]], list[float]]:
    """(the swing feet of every interval, the fraction of the gait's forward progress reached
    at every knot 0 … N): the timing of ``scenario`` (:mod:`problems.quadruped`) for ``feet``
    (left front, right front, left hind, right hind). A foot not in the swing tuple is in
    stance. ValueError for a parameter that leaves no stance phase."""
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario: expected one of {', '.join(SCENARIOS)}, got {scenario!r}")
    positive(cycles, "cycles", True)
    _check_knots(step_knots, support_knots)
    if scenario == "jump":
        if support_knots == 0:
            raise ValueError("support_knots: a jump needs stance phases to take off and land (≥ 1)")
        flight = max(1, int(round(np.sqrt(8.0 * step_height / 9.81) / dt)))
        return _timeline([((), support_knots), (tuple(feet), flight), ((), support_knots)])
    turns = [tuple(feet[i] for i in turn) for _ in range(cycles) for turn in TURNS[scenario]]
    return _timeline(_stepping(turns, step_knots, support_knots))


def biped_gait(steps: int, step_knots: int, support_knots: int,
               soles: tuple[str, str] = SOLES) -> tuple[list[tuple[str, ...]], list[float]]:
    """(the swinging sole of every interval, the fraction of the walk's forward progress
    reached at every knot 0 … N): ``support_knots`` on both ``soles`` (left, right), then
    ``steps`` single supports of ``step_knots`` intervals, the right sole swinging first and
    the soles alternating, each followed by ``support_knots`` on both (:mod:`problems.biped`)."""
    positive(steps, "steps", True)
    _check_knots(step_knots, support_knots)
    return _timeline(_stepping([(soles[1 - i % 2],) for i in range(steps)], step_knots, support_knots))


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
