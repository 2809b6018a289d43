"""Results do not depend on what memory held before: no kernel reads an entry of a
workspace (or of its stage records) before writing it.

The compiled kernels work in arrays made by ``np.empty``, whose contents are whatever the
allocator hands out: zero pages in a fresh process, earlier results later on. A kernel
that reads an entry it has not written yet gives results that depend on the history of
the process — as the contracted IDSVA-SO did for an inert body below another, which made
IPOPT's first Hessian of the space manipulator (at rest, zero multipliers: every body
inert) differ from one process to the next, now and then non-finite. glibc's
``MALLOC_PERTURB_`` fills every block malloc hands out with one byte: a child process
with it evaluates the same quantities and must reproduce this process's bit for bit.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

CHILD = r"""
import json, sys
import numpy as np
import optdyn, problems
from optdyn.solvers.ipopt import MultipleShootingNLP

out = {}
for name in ("space-manipulator", "ur5-reach"):
    prob = problems.get(name)
    xs, us = prob.xs_init, prob.us_init            # the initial guess: at rest
    rng = np.random.default_rng(0)
    lams = (np.zeros((prob.N, prob.ndx)), rng.normal(size=(prob.N, prob.ndx)))
    A, B, stages = prob.step_stages(xs[:-1], us)
    for i, lam in enumerate(lams):
        out[f"{name} step_hessians {i}"] = prob.step_hessians(xs[:-1], us, lam, stages)
    nlp = MultipleShootingNLP(prob, True, None, "contracted", reference=xs)
    z = nlp.pack(xs, us)
    nlp.jacobian(z)
    for i, lag in enumerate((np.zeros(nlp.m), rng.normal(size=nlp.m))):
        out[f"{name} ipopt hessian {i}"] = nlp.hessian(z, lag, 1.0)
    for solver in ("ddp", "ipopt"):
        res = optdyn.solve(prob, solver, max_iter=3)
        out[f"{name} {solver} xs"] = res.xs
print(json.dumps({k: np.asarray(v).ravel().tolist() for k, v in out.items()}))
"""


def _evaluate(env: dict) -> dict:
    run = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return {k: np.array(v) for k, v in json.loads(run.stdout.splitlines()[-1]).items()}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MALLOC_PERTURB_ is glibc's")
def test_results_do_not_depend_on_the_allocators_garbage():
    clean = _evaluate(dict(os.environ))
    for byte in ("1", "165"):  # blocks filled with 0xFE… (about −1e303) and 0x5A… (about 1e127)
        perturbed = _evaluate(dict(os.environ, MALLOC_PERTURB_=byte))
        assert perturbed.keys() == clean.keys()
        for key, value in clean.items():
            assert np.all(np.isfinite(value)), key
            np.testing.assert_array_equal(perturbed[key], value, err_msg=f"{key}, MALLOC_PERTURB_={byte}")
