"""Results on disk: exact round trip, the joint names they record, and clear errors for
anything that is not a result (or was written before joints followed Pinocchio's order)."""
import json
import zipfile

import numpy as np
import pytest

import problems
from optdyn.apps.io import load_result, save_result
from optdyn.ocp.task import problem_of
from optdyn.solvers.result import Result


def make_result(gains: bool = True) -> Result:
    rng = np.random.default_rng(3)
    N, nx, nu = 7, 4, 2
    return Result(
        xs=rng.normal(size=(N + 1, nx)), us=rng.normal(size=(N, nu)), cost=1.25e-3, converged=True,
        iterations=5, status="converged", message="gradient below tolerance",
        history={"cost": rng.normal(size=6), "regularization": np.array([1e-6, 1e-7, np.inf, 0, 1, 2])},
        solver="ddp", problem="arm-obstacle", params={"scenario": "bent", "N": 20, "target": np.array([0.4, 0.3])},
        wall_time=0.125, gains=rng.normal(size=(N, nu, nx)) if gains else None,
        extra={"multipliers": rng.normal(size=(3, 2)), "ipopt_status": 0, "log": "line 1\nline 2",
               "counts": np.int64(4), "handle": object()},
    )


def test_round_trip_is_exact(tmp_path):
    r = make_result()
    path = tmp_path / "run.npz"
    save_result(r, path)
    back = load_result(path)
    for name in ("xs", "us", "gains"):
        np.testing.assert_array_equal(getattr(back, name), getattr(r, name))
    for name in ("cost", "converged", "iterations", "status", "message", "solver", "problem", "wall_time"):
        assert getattr(back, name) == getattr(r, name), name
        assert type(getattr(back, name)) is type(getattr(r, name)), name
    assert back.history.keys() == r.history.keys()
    for name in r.history:
        np.testing.assert_array_equal(back.history[name], r.history[name])
    assert back.params == {"scenario": "bent", "N": 20, "target": [0.4, 0.3]}
    np.testing.assert_array_equal(back.extra["multipliers"], r.extra["multipliers"])
    assert back.extra["ipopt_status"] == 0 and back.extra["log"] == "line 1\nline 2" and back.extra["counts"] == 4
    assert back.extra["handle"].startswith("<object object")


def test_no_gains_and_any_suffix(tmp_path):
    r = make_result(gains=False)
    path = tmp_path / "result.data"  # written under exactly this name
    save_result(r, path)
    assert path.exists() and not (tmp_path / "result.data.npz").exists()
    assert load_result(path).gains is None


def test_archive_loads_without_pickle(tmp_path):
    path = tmp_path / "r.npz"
    save_result(make_result(), path)
    with np.load(path, allow_pickle=False) as f:
        assert {"meta", "xs", "us", "gains", "history/cost", "extra/multipliers"} <= set(f.files)


def test_params_that_cannot_be_saved(tmp_path):
    r = make_result()
    r.params = {"model": object()}
    with pytest.raises(ValueError, match="params"):
        save_result(r, tmp_path / "r.npz")
    with pytest.raises(ValueError, match="result"):
        save_result({"xs": 1}, tmp_path / "r.npz")


def corruptions(tmp_path):
    """(description, path) of files that are not readable results."""
    good = tmp_path / "good.npz"
    save_result(make_result(), good)
    data = good.read_bytes()
    files = {
        "missing": tmp_path / "nope.npz",
        "empty": tmp_path / "empty.npz",
        "truncated": tmp_path / "truncated.npz",
        "garbage": tmp_path / "garbage.npz",
        "text": tmp_path / "text.npz",
        "bare npy": tmp_path / "bare.npz",
        "foreign npz": tmp_path / "foreign.npz",
        "bad meta": tmp_path / "badmeta.npz",
        "other format": tmp_path / "other.npz",
        "bad shapes": tmp_path / "shapes.npz",
        "flipped bytes": tmp_path / "flipped.npz",
        "missing array": tmp_path / "missing_array.npz",
    }
    files["empty"].write_bytes(b"")
    files["truncated"].write_bytes(data[: len(data) // 2])
    files["garbage"].write_bytes(np.random.default_rng(0).bytes(500))
    files["text"].write_text("xs,us\n1,2\n")
    np.save(open(files["bare npy"], "wb"), np.ones(3))
    np.savez(files["foreign npz"], a=np.ones(3))
    np.savez(files["bad meta"], meta=np.array("{not json"), xs=np.ones((2, 1)), us=np.ones((1, 1)))
    np.savez(files["other format"], meta=np.array('{"format": "something"}'))
    with np.load(good) as f:
        arrays = {k: f[k] for k in f.files}
    np.savez(files["bad shapes"], **{**arrays, "us": np.ones((3, 3))})
    np.savez(files["missing array"], **{k: v for k, v in arrays.items() if k != "history/cost"})
    flipped = bytearray(data)
    with zipfile.ZipFile(good) as z:
        info = z.getinfo("xs.npy")
    start = info.header_offset + 30 + len(info.filename) + 10
    flipped[start:start + 20] = bytes(b ^ 0xFF for b in flipped[start:start + 20])
    files["flipped bytes"].write_bytes(bytes(flipped))
    return files


def test_corrupt_truncated_foreign_files_raise_value_error(tmp_path):
    for what, path in corruptions(tmp_path).items():
        with pytest.raises(ValueError) as e:
            load_result(path)
        message = str(e.value)
        assert str(path) in message and "\n" not in message, (what, message)


def _rewrite_meta(path, **changes) -> None:
    """Rewrite the archive at ``path`` with its meta's entries ``changes`` replaced."""
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    meta = {**json.loads(str(arrays["meta"][()])), **changes}
    np.savez(path, **{**arrays, "meta": np.array(json.dumps(meta))})


def test_version_1_files_are_refused_saying_why(tmp_path):
    """Version 1 results and closed loops were written when joints followed the URDF's
    declarations (HyQ's legs lf, rf, lh, rh; Pinocchio's lf, lh, rf, rh) and hold no joint
    names: refused, never read with two legs swapped."""
    path = tmp_path / "old.npz"
    save_result(make_result(), path)
    _rewrite_meta(path, version=1)
    with pytest.raises(ValueError, match=r"old.npz: result file version 1, written when joints followed the order "
                                         r"of the URDF's declarations; .* Pinocchio .*solve again"):
        load_result(path)


def test_the_joint_names_are_saved_and_a_rebuilt_problem_must_have_them(tmp_path):
    prob = problems.get("ur5-reach")
    r = Result(xs=np.tile(prob.x0, (prob.N + 1, 1)), us=prob.us_init, cost=0.0, converged=False, iterations=0,
               status="max_iter", problem="ur5-reach", params={})
    r.source = prob
    path = tmp_path / "r.npz"
    save_result(r, path)
    back = load_result(path)
    assert back.extra["joint_names"] == list(prob.model.joint_names)
    named = lambda name, params: problems.get(name, **params)  # noqa: E731
    assert problem_of(back, make=named).model.joint_names == prob.model.joint_names
    back.extra["joint_names"] = back.extra["joint_names"][::-1]
    with pytest.raises(ValueError, match=r"cannot rebuild problem 'ur5-reach' \(the result's joints \['wrist_3_joint'"):
        problem_of(back, make=named)
    del back.extra["problem_record"]
    with pytest.raises(ValueError, match="the result's joints"):
        problem_of(back, make=named)
