"""The space manipulator keeps its station after a push on the satellite (issue 41): MPC with a
receding horizon on ``space-manipulator`` with ``station=True`` (tool0 held at a placement
relative to the satellite) against a 10× finer plant, a 100 N push on the satellite for 0.2 s
once the tool is at its station, run to three times the problem's T = 3 s."""
import numpy as np
import pytest
from momentum import world_momentum

import dynamics as dyn
import optdyn
import problems
from problems.space_manipulator import Q_STATION, station_placement

PUSH = optdyn.Push("satellite", (0.0, 100.0, 0.0), 3.0, 0.2)
IMPULSE = np.array([0.0, 20.0, 0.0])  # N·s
DURATION = 9.0


@pytest.fixture(scope="module")
def station():
    return problems.get("space-manipulator", station=True)


@pytest.fixture(scope="module")
def kept(station):
    return optdyn.simulate(optdyn.MPC(station, "ilqr", iterations=1), DURATION, disturbances=[PUSH])


def station_errors(model, xs):
    """(distance (m), angle (rad)) of tool0 from its station in the satellite's frame at each
    state, from the two frames' world placements."""
    M = station_placement(model)
    out = []
    for x in xs:
        (Rs, ps), (Rt, pt) = (dyn.frame_placement(model, x[: model.nq], f) for f in ("satellite", "tool0"))
        cos = (np.trace(M[:3, :3].T @ Rs.T @ Rt) - 1) / 2
        out.append((np.linalg.norm(Rs.T @ (pt - ps) - M[:3, 3]), np.arccos(np.clip(cos, -1, 1))))
    return np.array(out).T


def between(loop, start, end):
    return (loop.t >= start - 1e-9) & (loop.t <= end + 1e-9)


def test_the_station_is_where_the_reach_leaves_the_arm():
    """Q_STATION is the arm's angles at T of the reach's optimum (DDP; measured 4.8e-5 rad off
    the rounded constant), and the station is tool0's placement in the satellite's frame there."""
    reach = problems.get("space-manipulator")
    result = optdyn.solve(reach, "ddp")
    q = result.xs[-1, : reach.model.nq]
    assert result.converged and np.abs(q[7:] - Q_STATION).max() < 2e-4
    distance, angle = station_errors(reach.model, result.xs[-1:])
    assert distance[0] < 2e-4 and angle[0] < 2e-4
    assert np.linalg.norm(q[:3]) > 1e-3  # the satellite moved: the station is not the inertial target


def test_the_tool_returns_to_its_station_after_a_push_and_keeps_it(station, kept):
    """Measured (iLQR, one iteration per step; the default ILQR and the FILQR the task shipped
    before alike, to two digits): 1.3e-5 m from the station just before the
    push, 5.5 mm at most after it, 1.6e-4 m 1–2 s after it began, 5.7e-6 m 2–3 s after, 1e-10 m
    at 9 s, while the satellite drifts 0.37 m. Held to 1e-4 m and 1e-4 rad from 2 s after the
    push on (18× the measured worst, 50× below the push's excursion) and 1e-6 m at the end."""
    assert not kept.stopped and kept.t[-1] == pytest.approx(DURATION)
    distance, angle = station_errors(station.model, kept.xs)
    assert distance[between(kept, 2.5, 3.0)].max() < 1e-4  # at the station before the push
    assert distance[between(kept, 3.0, 4.0)].max() > 2e-3  # the push moved the tool off it
    after = between(kept, 5.0, DURATION)
    assert distance[after].max() < 1e-4 and angle[after].max() < 1e-4
    assert distance[-1] < 1e-6
    satellite = np.array([dyn.frame_placement(station.model, x[: station.model.nq], "satellite")[1] for x in kept.xs])
    assert np.linalg.norm(satellite[-1] - satellite[between(kept, 3.2, 3.2)][0]) > 0.3  # the whole system drifts


def test_the_push_gives_the_system_its_impulse_and_nothing_else_changes_its_momentum(station, kept):
    """Linear momentum 0 before the push (measured 8e-7: the plant's RK4 conserves it to that),
    the push's impulse (0, 20, 0) N·s after it (measured 5.3e-4 off: the plant holds the push
    in body axes over each 10 ms step while the satellite turns), constant from then on, and
    the angular momentum about the world origin ≈ (satellite position) × impulse, constant."""
    H = np.array([world_momentum(station.model, x, "satellite") for x in kept.xs])
    assert np.abs(H[between(kept, 0.0, 3.0)]).max() < 1e-5
    after = between(kept, 3.2, DURATION)
    assert np.abs(H[after, :3] - IMPULSE).max() < 1e-3
    assert np.ptp(H[after], axis=0).max() < 1e-6
    p = dyn.frame_placement(station.model, kept.xs[between(kept, 3.0, 3.0)][0][: station.model.nq], "satellite")[1]
    assert np.abs(H[after][-1, 3:] - np.cross(p, IMPULSE)).max() < 1e-3 and np.abs(H[after][-1, 3:]).max() > 0.05


def test_the_inertial_task_does_not_keep_the_station():
    """The reach (tool0 to an inertial target) in the same loop: with a receding horizon it never
    gets there (its T moves along), and with a shrinking one it is at the station at T and
    drifts off once pushed (measured 0.25 m at 9 s)."""
    reach = problems.get("space-manipulator")
    for horizon in ("receding", "shrinking"):
        loop = optdyn.simulate(optdyn.MPC(reach, "ilqr", iterations=1, horizon=horizon), DURATION,
                               disturbances=[PUSH])
        distance, _ = station_errors(reach.model, loop.xs)
        assert distance[-1] > 0.1, horizon
        if horizon == "shrinking":
            assert distance[between(loop, 3.0, 3.0)][0] < 1e-3


def test_bad_input():
    with pytest.raises(ValueError, match="^station:"):
        problems.get("space-manipulator", station="yes")
    with pytest.raises(ValueError, match="^target:"):
        problems.get("space-manipulator", station=True, target=(0.2, 0.5, 1.0))
