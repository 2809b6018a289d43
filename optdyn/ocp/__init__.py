"""The discrete optimal-control problem every solver sees: the state manifold, the
interval dynamics (explicit Runge–Kutta with exact sensitivities), costs, constraints
and the task description the viewer draws."""
