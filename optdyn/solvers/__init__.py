"""Solvers of the discrete problem of :mod:`optdyn.ocp`: DDP/iLQR, the augmented
Lagrangian around them, IPOPT multiple shooting, :func:`solve` and its :class:`Result`."""
