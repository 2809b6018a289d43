"""What is built on the solvers: the command line, Dask sweeps, result files, solver
comparisons, task reports and obstacle clearances."""
