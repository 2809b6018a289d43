"""Batched contact and impulse dynamics (dyn.batch) against the single-knot functions."""
from __future__ import annotations

import numpy as np
import pytest

import dynamics as dyn

from test_floating_base import mixed_tree

MODEL = mixed_tree(3, "floating")
CONTACTS = [dyn.Contact("l6", reference="local", baumgarte=(2.0, 1.5)), dyn.Contact("l7", kind="6d"),
            dyn.Contact("l3")]
K = 4


def knots(seed):
    rng = np.random.default_rng(seed)
    Q = np.array([dyn.random_configuration(MODEL, rng) for _ in range(K)])
    return Q, rng.normal(size=(K, MODEL.nv)), rng.normal(size=(K, MODEL.nv)), rng.normal(size=(K, MODEL.nv + 12))


def assert_knotwise(batched, single):
    for k in range(K):
        for b, s in zip(batched, single(k)):
            np.testing.assert_allclose(b[k], s, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(s).max()))


def test_contact_batches_equal_the_single_knot_functions():
    Q, V, TAU, W = knots(1)
    F = np.random.default_rng(2).normal(size=(K, MODEL.njoints, 6))
    b = dyn.batch
    assert_knotwise(b.contact_dynamics_batch(MODEL, Q, V, TAU, CONTACTS, F),
                    lambda k: dyn.contact_dynamics(MODEL, Q[k], V[k], TAU[k], CONTACTS, F[k]))
    assert_knotwise(b.contact_dynamics_derivatives_batch(MODEL, Q, V, TAU, CONTACTS, F),
                    lambda k: dyn.contact_dynamics_derivatives(MODEL, Q[k], V[k], TAU[k], CONTACTS, F[k]))
    assert_knotwise(b.contact_dynamics_second_derivatives_contracted_batch(MODEL, Q, V, TAU, CONTACTS, W, F),
                    lambda k: dyn.contact_dynamics_second_derivatives_contracted(MODEL, Q[k], V[k], TAU[k], CONTACTS,
                                                                                 W[k], F[k]))


def test_impulse_batches_equal_the_single_knot_functions():
    Q, V, _, W = knots(3)
    b = dyn.batch
    assert_knotwise(b.impulse_dynamics_batch(MODEL, Q, V, CONTACTS, 0.3),
                    lambda k: dyn.impulse_dynamics(MODEL, Q[k], V[k], CONTACTS, 0.3))
    assert_knotwise(b.impulse_dynamics_derivatives_batch(MODEL, Q, V, CONTACTS, 0.3),
                    lambda k: dyn.impulse_dynamics_derivatives(MODEL, Q[k], V[k], CONTACTS, 0.3))
    assert_knotwise(b.impulse_dynamics_second_derivatives_contracted_batch(MODEL, Q, V, CONTACTS, W, 0.3),
                    lambda k: dyn.impulse_dynamics_second_derivatives_contracted(MODEL, Q[k], V[k], CONTACTS, W[k], 0.3))


def test_batches_are_bitwise_identical_on_two_threads():
    """The knots split into chunks, one workspace each: the same numbers for 1 and 2 threads."""
    Q, V, TAU, W = knots(7)
    b, n = dyn.batch, dyn.get_num_threads()
    calls = [lambda: b.contact_dynamics_derivatives_batch(MODEL, Q, V, TAU, CONTACTS),
             lambda: b.contact_dynamics_second_derivatives_contracted_batch(MODEL, Q, V, TAU, CONTACTS, W),
             lambda: b.impulse_dynamics_second_derivatives_contracted_batch(MODEL, Q, V, CONTACTS, W, 0.3)]
    try:
        dyn.set_num_threads(1)
        serial = [call() for call in calls]
        dyn.set_num_threads(min(2, dyn.parallel.max_threads()))
        for one, call in zip(serial, calls):
            for x, y in zip(one, call()):
                np.testing.assert_array_equal(x, y)
    finally:
        dyn.set_num_threads(n)


def test_batches_allocate_nothing_per_knot():
    """Twice the knots, the same number of NRT allocations (the workspaces made once per thread);
    all six batched functions, on one thread (on two, the count depends on whether the pool
    thread took part)."""
    from test_parallel import _allocations

    threads = dyn.get_num_threads()
    dyn.set_num_threads(1)
    counts = []
    for seed in (8, 9):
        Q, V, TAU, W = knots(seed)
        if counts:  # twice the knots
            Q, V, TAU, W = (np.concatenate((x, x)) for x in (Q, V, TAU, W))
        b = dyn.batch
        counts.append([_allocations(lambda: b.contact_dynamics_batch(MODEL, Q, V, TAU, CONTACTS)),
                       _allocations(lambda: b.contact_dynamics_derivatives_batch(MODEL, Q, V, TAU, CONTACTS)),
                       _allocations(lambda: b.contact_dynamics_second_derivatives_contracted_batch(
                           MODEL, Q, V, TAU, CONTACTS, W)),
                       _allocations(lambda: b.impulse_dynamics_batch(MODEL, Q, V, CONTACTS)),
                       _allocations(lambda: b.impulse_dynamics_derivatives_batch(MODEL, Q, V, CONTACTS)),
                       _allocations(lambda: b.impulse_dynamics_second_derivatives_contracted_batch(
                           MODEL, Q, V, CONTACTS, W))])
    dyn.set_num_threads(threads)
    assert counts[0] == counts[1]


def test_batches_name_the_bad_argument_and_knot():
    Q, V, TAU, W = knots(5)
    Q[2, 3:7] *= 2.0
    with pytest.raises(ValueError, match="^Q: at knot 2"):
        dyn.batch.contact_dynamics_batch(MODEL, Q, V, TAU, CONTACTS)
    Q, V, TAU, W = knots(5)
    V[1, 0] = np.nan
    with pytest.raises(ValueError, match="^V: expected finite values, got NaN or inf at knot 1"):
        dyn.batch.impulse_dynamics_batch(MODEL, Q, V, CONTACTS)
    with pytest.raises(ValueError, match=r"^W: expected shape \(K, 32\)"):
        dyn.batch.contact_dynamics_second_derivatives_contracted_batch(MODEL, Q, np.zeros_like(V), TAU, CONTACTS,
                                                                       W[:, :-1])
    with pytest.raises(ValueError, match=r"^contacts: dependent .*at knot 0\)"):
        dyn.batch.contact_dynamics_derivatives_batch(MODEL, Q, np.zeros_like(V), TAU, CONTACTS + CONTACTS[1:2])
