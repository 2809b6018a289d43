"""optdyn.sweep on real Dask: an embedded LocalCluster, and a `dask scheduler` with two
`dask worker` processes on 127.0.0.1 (one of them killed with SIGKILL mid-sweep).

Every sweep uses the cheap pendulum swing-up (DDP, ~0.2 s a solve once warm).
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image

import optdyn
import problems
from optdyn.apps.cli import main
from optdyn.apps.io import load_result
from optdyn.apps.sweep import (BATCH_SECONDS, COLUMNS, IN_FLIGHT, Job, _batch_size, _lqr_gains, distinct_optima,
                          job_name, job_seed, local_cluster, perturbed_guess, run_job, run_jobs, sweep)

pytest.importorskip("distributed")
from distributed import Client  # noqa: E402

pytestmark = pytest.mark.cost(27)

PENDULUM = problems.factory("pendulum")
GRID = {"u_max": [5.0, 6.0]}
STARTS = 2
DASK = str(Path(sys.executable).parent / "dask")


def read_summary(out: Path) -> list[dict]:
    with open(out / "summary.csv", newline="") as f:
        return list(csv.DictReader(f))


# ------------------------------------------------------------------ no cluster

def test_problems_factory_is_the_registered_maker():
    assert problems.factory("pendulum") is problems.pendulum.make_pendulum
    assert problems.factory("arm_obstacle") is problems.arm_obstacle.make
    with pytest.raises(ValueError, match="unknown problem"):
        problems.factory("no-such-problem")


def test_seeds_and_names_are_reproducible_and_distinct():
    point = {"u_max": 5.0, "N": 60}
    assert job_seed(point, 1) == job_seed(dict(reversed(point.items())), 1)  # key order does not matter
    seeds = {job_seed(point, s) for s in range(1, 50)} | {job_seed({"u_max": 6.0, "N": 60}, 1)}
    assert len(seeds) == 50 and all(0 <= s < 2 ** 63 for s in seeds)
    names = {job_name(point, s) for s in range(3)} | {job_name({"u_max": 5.5, "N": 60}, 0)}
    assert len(names) == 4 and all(re.fullmatch(r"[A-Za-z0-9.=+_-]+", n) for n in names)


def test_lqr_gains_are_the_riccati_gains():
    """The solvers' backward pass, fed an LQR, gives the gains of the textbook Riccati
    recursion P_k = Q + A_kᵀP_k+1(A_k + B_k K_k), K_k = −(R + B_kᵀP_k+1B_k)⁻¹B_kᵀP_k+1A_k."""
    prob = problems.get("double-pendulum")
    rng = np.random.default_rng(7)
    N, ndx, nu = 12, prob.ndx, prob.nu
    A = np.eye(ndx) + 0.1 * rng.standard_normal((N, ndx, ndx))
    B = rng.standard_normal((N, ndx, nu))
    Q, R = np.diag(rng.uniform(0.5, 2.0, ndx)), np.diag(rng.uniform(0.1, 1.0, nu))
    K = _lqr_gains(A, B, Q, R, 10.0 * Q, prob)
    P = 10.0 * Q
    for k in range(N - 1, -1, -1):
        expected = -np.linalg.solve(R + B[k].T @ P @ B[k], B[k].T @ P @ A[k])
        np.testing.assert_allclose(K[k], expected, rtol=1e-10, atol=1e-12)
        P = Q + A[k].T @ P @ (A[k] + B[k] @ expected)


def test_lqr_gains_from_the_kernel_cache_in_a_fresh_process():
    """The backward pass loaded from the disk cache (compiled by the test above) and called
    first thing in a new process gives finite gains (a kernel whose callees numba does not set
    up when it loads it from the cache would fail here)."""
    code = ("import numpy as np, problems; from optdyn.apps.sweep import _lqr_gains; "
            "p = problems.get('double-pendulum'); n, m = p.ndx, p.nu; "
            "K = _lqr_gains(np.stack([np.eye(n)] * 3), np.ones((3, n, m)), np.eye(n), np.eye(m), np.eye(n), p); "
            "print(np.isfinite(K).all())")
    for _ in range(2):  # the first run may compile and write the cache, the second loads it
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
        assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr[-2000:]


def test_perturbed_guess_is_seeded_consistent_and_feasible():
    prob = problems.arm_obstacle.make()  # open-loop unstable: a perturbed torque sequence alone would diverge
    xs, us = perturbed_guess(prob, 123)
    xs2, us2 = perturbed_guess(prob, 123)
    assert np.array_equal(xs, xs2) and np.array_equal(us, us2)
    assert xs.shape == (prob.N + 1, prob.nx) and us.shape == (prob.N, prob.nu)
    assert np.array_equal(xs[0], prob.x0) and np.all(np.isfinite(xs))
    assert np.all(us >= prob.u_lower) and np.all(us <= prob.u_upper)
    assert np.allclose(prob.rollout(us), xs, atol=1e-9)  # the states are the rollout of the controls
    nv = prob.model.nv
    moved = np.max(np.abs(xs[:, :nv] - prob.xs_init[:, :nv]))
    assert 0.05 < moved < 3.0  # a real perturbation of the guess's path, not a runaway
    xs3, _ = perturbed_guess(prob, 124)
    assert not np.allclose(xs3, xs)
    xs_small, _ = perturbed_guess(prob, 123, scale=0.01)
    assert np.max(np.abs(xs_small[:, :nv] - prob.xs_init[:, :nv])) < moved


def test_perturbed_guess_on_a_floating_base_moves_the_arm_and_lets_the_base_follow():
    """The space manipulator: the state is on a manifold (unit quaternion) and the
    free-flying base is unactuated. The wave moves the actuated arm only, the LQR tracks it
    in tangent coordinates, and the base turns and drifts as the arm's reaction makes it:
    the guess is the rollout of its controls, its quaternions stay unit, and a job started
    from it solves to the task's optimum."""
    prob = problems.get("space-manipulator")
    xs, us = perturbed_guess(prob, 123)
    xs2, us2 = perturbed_guess(prob, 123)
    assert np.array_equal(xs, xs2) and np.array_equal(us, us2)
    assert xs.shape == (prob.N + 1, prob.nx) and us.shape == (prob.N, prob.nu)
    assert np.array_equal(xs[0], prob.x0)
    np.testing.assert_allclose(np.linalg.norm(xs[:, 3:7], axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(prob.rollout(us), xs, atol=1e-9)
    dx = prob.state_difference(prob.xs_init, xs)
    arm, base = np.max(np.abs(dx[:, 6:12])), np.max(np.abs(dx[:, :6]))
    assert 0.05 < arm < 3.0 and 0.0 < base < arm  # the arm perturbed, the base moved by its reaction
    record = run_job(problems.factory("space-manipulator"), {}, {"N": 30}, 2, "ddp", {}, 0.3)
    res = record["result"]
    assert res.status == "converged" and not np.array_equal(res.us, prob.us_init)
    assert res.cost == pytest.approx(optdyn.solve(prob, "ddp").cost, rel=1e-6)


def _standing_on_two_feet(N: int = 6):
    """The legged test robot on feet 0 and 1 (a contact problem), at rest."""
    from legged_robot import Q_STAND, legged

    import dynamics as dyn
    model = legged()
    x0 = np.r_[Q_STAND, np.zeros(model.nv)]
    feet = [dyn.Contact("foot0"), dyn.Contact("foot1")]
    return optdyn.Problem(model, x0, N, 0.05, optdyn.costs.StateCost(1.0, x0, model=model), contacts=[feet] * N)


def test_perturbed_guess_with_contacts_is_the_wave_for_multiple_shooting(monkeypatch):
    """With contacts the guess is the perturbed reference and the problem's own controls, not
    an LQR tracking run (a wave in stance legs tracked through rigid contacts diverged), and
    every solver gets the states too: a problem with contacts starts by multiple shooting."""
    prob = _standing_on_two_feet()
    xs, us = perturbed_guess(prob, 123)
    dx = prob.state_difference(prob.xs_init, xs)
    assert np.array_equal(us, prob.us_init) and np.array_equal(xs[0], prob.x0)
    assert np.max(np.abs(dx[:, 6:prob.model.nv])) > 0.05 and np.max(np.abs(dx[:, :6])) == 0.0  # legs, not the base
    seen = {}
    monkeypatch.setattr(optdyn.solvers.solve, "solve", lambda problem, solver, **kw: seen.update(kw) or 1 / 0)
    record = run_job(lambda: _standing_on_two_feet(), {}, {}, 1, "ilqr", {}, 0.3)
    assert "ZeroDivisionError" in record["error"]  # the solve was reached, with both guesses
    xs, us = perturbed_guess(prob, job_seed({}, 1))
    np.testing.assert_allclose(seen["xs_init"], xs, atol=1e-12)  # the job's own problem: least squares again
    np.testing.assert_allclose(seen["us_init"], us, atol=1e-12)


def test_run_job_records_exceptions_instead_of_raising():
    record = run_job(PENDULUM, {}, {"u_max": -1.0}, 0, "ddp", {}, 0.3)
    assert "result" not in record and record["error"].startswith("ValueError: u_max")


def test_short_jobs_share_a_task_and_the_last_ones_stay_spread():
    """One job per task until a job's time is known; then as many as take BATCH_SECONDS at the
    mean time (45 ms pendulum solves: 6 a task), fewer where the remaining jobs would not give
    each worker thread IN_FLIGHT tasks; jobs longer than BATCH_SECONDS one each."""
    assert _batch_size([], 100, 2) == 1
    assert _batch_size([0.045, 0.045], 100, 2) == int(np.ceil(BATCH_SECONDS / 0.045)) == 6
    assert _batch_size([0.045], 9, 2) == int(np.ceil(9 / (IN_FLIGHT * 2))) == 3
    assert _batch_size([2.0, 30.0], 100, 8) == 1
    assert _batch_size([0.0], 10**6, 1) == int(np.ceil(BATCH_SECONDS / 1e-3))


def test_a_task_of_several_jobs_records_each_in_order():
    records = run_jobs(PENDULUM, {}, [({"u_max": 5.0}, 0), ({"u_max": -1.0}, 0), ({"u_max": 4.0}, 1)], "ddp",
                       {"max_iter": 3}, 0.3)
    assert [("result" in r) for r in records] == [True, False, True]
    assert records[1]["error"].startswith("ValueError: u_max")
    assert records[0]["result"].iterations == 3 and records[2]["result"].iterations == 3


def test_distinct_optima_groups_by_cost_and_trajectory():
    a, b = np.zeros((5, 2)), np.ones((5, 2))
    entries = [(0, 1.0, a, "f0"), (1, 1.0 + 1e-6, a + 1e-4, "f1"), (2, 2.0, b, "f2"),
               (3, 1.0, b, "f3"),  # same cost as the first, other trajectory: another optimum
               (4, 2.0 + 1e-7, b, "f4")]
    optima = distinct_optima(entries)
    assert [(o.cost, sorted(o.starts)) for o in optima] == [(1.0, [0, 1]), (1.0, [3]), (2.0, [2, 4])]
    assert len(distinct_optima(entries, state_tol=10.0)) == 2
    assert len(distinct_optima(entries, cost_rtol=0.0, state_tol=0.0)) == 5


@pytest.mark.parametrize("kwargs, word", [
    ({"grid": {"colour": [1, 2]}}, "grid: the problem factory takes no parameter 'colour'"),
    ({"grid": {}}, "grid: expected a non-empty dict"),
    ({"grid": {"u_max": []}}, "grid: parameter 'u_max' has no values"),
    ({"grid": {"u_max": 5.0}}, "grid: values of 'u_max'"),
    ({"grid": {"u_max": [5.0, 5.0]}}, "repeats a value"),
    ({"starts": 0}, "starts: expected an integer ≥ 1"),
    ({"starts": 1.5}, "starts"),
    ({"solver": "newton"}, "solver: expected one of"),
    ({"scenario": "bent"}, "scenario: the problem factory takes no scenario"),
    ({"params": {"colour": 3}}, "params: the problem factory takes no parameter 'colour'"),
    ({"params": {"u_max": 3.0}}, "grid: 'u_max' is also a fixed parameter"),
    ({"options": {"us_init": np.zeros((60, 1))}}, "options: 'us_init'"),
    ({"workers": 0}, "workers: expected an integer ≥ 1"),
    ({"workers": 2, "scheduler": "tcp://127.0.0.1:1"}, "workers:"),
    ({"scheduler": "127.0.0.1"}, "scheduler: expected an address"),
    ({"perturbation": -0.1}, "perturbation:"),
    ({"factory": "pendulum"}, "factory: expected a callable"),
    ({"factory": lambda: None}, "grid: the problem factory takes no parameter 'u_max'"),
    ({"factory": lambda u_max: u_max}, "factory: returned float"),
])
def test_bad_input_is_refused_before_anything_runs(tmp_path, kwargs, word):
    args = {"factory": PENDULUM, "grid": GRID, "out": tmp_path / "out"}
    args.update(kwargs)
    factory = args.pop("factory")
    with pytest.raises(ValueError) as e:
        sweep(factory, **args)
    assert word in str(e.value)
    assert not (tmp_path / "out").exists()  # nothing written, no cluster started


def test_local_cluster_checks_workers():
    with pytest.raises(ValueError, match="workers: expected an integer ≥ 1"):
        local_cluster(0)


@pytest.mark.parametrize("argv, words", [
    (("sweep", "pendulum"), ("grid: expected a non-empty dict",)),
    (("sweep", "pendulum", "--grid", "u_max=5,6", "--starts", "0"), ("starts: expected an integer ≥ 1",)),
    (("sweep", "pendulum", "--grid", "colour=1,2"), ("grid:", "'colour'", "u_max")),
    (("sweep", "pendulum", "--grid", "u_max="), ("parameter 'u_max' has no values",)),
    (("sweep", "pendulum", "--grid", "u_max=5", "--grid", "u_max=6"), ("--grid", "given twice")),
    (("sweep", "no-such-problem", "--grid", "u_max=5"), ("unknown problem",)),
    (("sweep", "pendulum", "--scenario", "bent", "--grid", "u_max=5"), ("--scenario", "no scenario 'bent'")),
    (("sweep", "arm-obstacle", "--scenario", "bent", "--grid", "scenario=bent,straight"), ("scenario",)),
])
def test_cli_bad_sweeps_fail_with_one_line_before_running(tmp_path, capsys, argv, words):
    out = tmp_path / "out"
    code = main([*argv, "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1, err
    for w in words:
        assert w in err, (w, err)
    assert not out.exists()  # refused before anything was written or started


def test_unreachable_scheduler_fails_fast(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = time.perf_counter()
    with pytest.raises(ConnectionError, match=f"scheduler: cannot reach tcp://127.0.0.1:{port}"):
        sweep(PENDULUM, GRID, out=tmp_path / "out", scheduler=f"tcp://127.0.0.1:{port}", timeout=2.0)
    assert time.perf_counter() - t < 30  # a bound against hanging, not a timing measurement
    assert not list((tmp_path / "out").glob("*.npz"))


# ------------------------------------------------------- embedded LocalCluster

@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    """One finished sweep (2 points × 2 starts) on an embedded 2-worker LocalCluster."""
    out = tmp_path_factory.mktemp("sweep") / "pendulum"
    summary = sweep(PENDULUM, GRID, starts=STARTS, out=out, workers=2, progress=False)
    return out, summary


def test_local_cluster_writes_every_job(local_sweep):
    out, summary = local_sweep
    assert summary.solved == 4 and summary.reused == 0 and summary.failed == 0
    rows = read_summary(out)
    assert list(rows[0]) == ["u_max", *COLUMNS]
    assert [(float(r["u_max"]), int(r["start"])) for r in rows] == [(5.0, 0), (5.0, 1), (6.0, 0), (6.0, 1)]
    workers = set()
    for row, mem in zip(rows, summary.rows):
        res = load_result(out / row["file"])
        assert res.problem == "pendulum" and res.params["u_max"] == float(row["u_max"])
        assert float(row["cost"]) == res.cost == mem["cost"] and int(row["iterations"]) == res.iterations
        assert row["status"] == res.status and row["error"] == "" and float(row["wall_time"]) > 0
        assert res.extra["sweep_start"] == int(row["start"])
        assert res.extra["sweep_point"] == {"u_max": res.params["u_max"]}
        workers.add(row["worker"])
    assert len(workers) == 2  # both workers took jobs
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["identity"]["problem"] == "pendulum" and manifest["identity"]["grid_keys"] == ["u_max"]
    pixels = image.imread(out / "cost.png")
    assert pixels.ndim == 3 and pixels.std() > 0.01


def test_starts_use_the_default_and_the_seeded_perturbed_guess(local_sweep):
    out, summary = local_sweep
    point = {"u_max": 6.0}
    prob = PENDULUM(**point)
    plain = optdyn.solve(prob, "ddp")
    _, us = perturbed_guess(prob, job_seed(point, 1))
    perturbed = optdyn.solve(prob, "ddp", us_init=us)
    rows = {(r["u_max"], r["start"]): r for r in summary.rows}
    assert rows[(6.0, 0)]["cost"] == plain.cost and rows[(6.0, 0)]["iterations"] == plain.iterations
    assert rows[(6.0, 1)]["cost"] == perturbed.cost and rows[(6.0, 1)]["iterations"] == perturbed.iterations
    assert rows[(6.0, 1)]["seed"] == job_seed(point, 1) and rows[(6.0, 0)]["seed"] == ""


def test_summary_best_cost_and_optima(local_sweep):
    out, summary = local_sweep
    for ps in summary.points:
        costs = [r["cost"] for r in summary.rows if r["u_max"] == ps.point["u_max"] and r["converged"] is True]
        assert ps.best["cost"] == min(costs)
        assert 1 <= len(ps.optima) <= len(costs) and sum(len(o.starts) for o in ps.optima) == len(costs)
    assert "best cost" in str(summary) and str(out / "summary.csv") in str(summary)


def test_resume_solves_nothing(local_sweep):
    out, _ = local_sweep
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("*.npz")}
    again = sweep(PENDULUM, GRID, starts=STARTS, out=out, workers=2, progress=False)
    assert again.solved == 0 and again.reused == 4
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.npz")} == stamps
    assert [r["cost"] for r in again.rows] == [float(r["cost"]) for r in read_summary(out)]


def test_resume_solves_only_what_is_missing(local_sweep, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(local_sweep[0], out)
    missing = sorted(out.glob("*.npz"))[1]
    missing.unlink()
    again = sweep(PENDULUM, GRID, starts=STARTS, out=out, workers=1, progress=False)
    assert again.solved == 1 and again.reused == 3 and missing.exists()
    assert [r["cost"] for r in again.rows] == [r["cost"] for r in local_sweep[1].rows]  # deterministic


@pytest.mark.parametrize("change", [{"solver": "ilqr"}, {"grid": {"N": [40]}}, {"params": {"N": 40}},
                                   {"factory": problems.factory("double-pendulum")}, {"options": {"max_iter": 3}}])
def test_a_directory_of_another_sweep_is_refused(local_sweep, change):
    out, _ = local_sweep
    args = {"factory": PENDULUM, "grid": GRID, "starts": STARTS, "out": out, "workers": 1}
    args.update(change)
    factory = args.pop("factory")
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(ValueError, match="holds a different sweep"):
        sweep(factory, **args)
    assert sorted(p.name for p in out.iterdir()) == before


def test_example_script_runs_and_resumes(tmp_path):
    script = Path(__file__).resolve().parent.parent / "examples" / "sweep_pendulum.py"
    runs = [subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
            for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr[-2000:]
    assert "solved 9, reused 0" in runs[0].stdout and "solved 0, reused 9" in runs[1].stdout
    assert "lowest cost" in runs[0].stdout
    assert len(read_summary(tmp_path / "runs" / "pendulum")) == 9


# ---------------------------------------------------- dask scheduler + 2 workers

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


@pytest.fixture(scope="module")
def dask_cluster():
    """`dask scheduler` + two `dask worker --no-nanny` processes on 127.0.0.1: (address, client, workers)."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    log = subprocess.DEVNULL
    procs = [subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              stdout=log, stderr=log)]
    client = None
    try:
        workers = {}
        for name in ("w0", "w1"):
            p = subprocess.Popen([DASK, "worker", address, "--name", name, "--nthreads", "1", "--no-nanny",
                                  "--no-dashboard", "--host", "127.0.0.1", "--death-timeout", "60"],
                                 stdout=log, stderr=log)
            procs.append(p)
            workers[name] = p
        client = Client(address, timeout=30, set_as_default=False)
        client.wait_for_workers(2, timeout=60)
        yield address, client, workers
    finally:
        if client is not None:
            client.close(timeout=10)
        _stop(procs[1:])
        _stop(procs[:1])


def test_cli_on_a_cluster_records_errors_and_reopens_results(dask_cluster, tmp_path, capsys):
    address, _, _ = dask_cluster
    out = tmp_path / "cli"
    code = main(["sweep", "pendulum", "--grid", "u_max=5,-1", "--starts", "1", "--out", str(out),
                 "--scheduler", address, "--no-progress"])
    captured = capsys.readouterr()
    assert code == 1 and captured.err.strip().count("\n") == 0 and "1 of 2 jobs failed" in captured.err
    rows = {r["u_max"]: r for r in read_summary(out)}
    assert rows["-1"]["status"] == "error" and "ValueError: u_max" in rows["-1"]["error"] and rows["-1"]["file"] == ""
    assert rows["5"]["status"] == "converged" and "solved 2, reused 0, errors 1" in captured.out
    assert main(["show", str(out / rows["5"]["file"])]) == 0
    assert f"cost        {float(rows['5']['cost']):.10g}" in capsys.readouterr().out
    # the failed job is tried again on resume, the finished one is not
    code = main(["sweep", "pendulum", "--grid", "u_max=5,-1", "--out", str(out), "--scheduler", address,
                 "--no-progress"])
    assert code == 1 and "solved 1, reused 1, errors 1" in capsys.readouterr().out
    # another solver on the same directory: refused with one line
    code = main(["sweep", "pendulum", "--grid", "u_max=5,-1", "--out", str(out), "--solver", "ilqr"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "holds a different sweep" in err


def test_a_worker_killed_mid_sweep_loses_no_job(dask_cluster, tmp_path):
    address, client, workers = dask_cluster
    info = client.scheduler_info()["workers"]
    if len(info) < 2:
        pytest.skip("needs both workers of the cluster")
    by_name = {w["name"]: addr for addr, w in info.items()}
    victim, survivor = by_name["w0"], by_name["w1"]
    grid = {"u_max": [4.5, 5.0, 5.5, 6.0, 6.5, 7.0]}
    out = tmp_path / "killed"
    box = {}
    longer = {"N": 100, "dt": 0.03}  # ~0.5 s a job, so that the victim is caught mid-job
    thread = threading.Thread(target=lambda: box.update(
        summary=sweep(PENDULUM, grid, starts=2, out=out, params=longer, scheduler=address, progress=False)),
        daemon=True)
    thread.start()
    killed = set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and thread.is_alive():
        done = list(out.glob("*.npz")) if out.exists() else []
        processing = client.processing(workers=[victim]).get(victim, [])
        if done and processing:  # workers warm, the victim busy with a job
            killed = {re.match(r"optdyn-sweep-(.+)-[0-9a-f]{8}$", k).group(1) for k in processing}
            os.kill(workers["w0"].pid, signal.SIGKILL)
            workers["w0"].wait(timeout=10)
            break
        time.sleep(0.05)
    assert killed, "the victim worker was never seen processing a job"
    thread.join(timeout=120)
    assert not thread.is_alive() and "summary" in box
    summary = box["summary"]
    assert summary.failed == 0 and summary.solved == 12 and len(summary.rows) == 12
    rows = {Job({"u_max": r["u_max"]}, r["start"]).name: r for r in summary.rows}
    assert all(r["status"] != "error" and (out / r["file"]).exists() for r in rows.values())
    for name in killed:  # the jobs in flight on the dead worker were done again by the survivor
        assert rows[name]["worker"] == survivor
