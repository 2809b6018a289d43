"""Ready-made optimal-control problems, by name.

    import problems
    problems.names()                                   # ['arm-obstacle', 'double-pendulum', ...]
    prob = problems.get("arm-obstacle", scenario="bent")
    prob = problems.arm_obstacle.make(scenario="straight")   # the module directly
    make = problems.factory("pendulum")                # the factory itself (for optdyn.sweep)

Names use dashes (underscores are accepted too). Each entry names the module and
factory that builds it, a one-line description and its scenarios (values of the
factory's ``scenario`` parameter, empty if it has none). Modules are imported only when
a problem is requested, so the registry works even if one of them is missing.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass


class ParameterError(ValueError, TypeError):
    """A keyword the problem's factory does not take (a ValueError, and a TypeError as
    Python itself would raise)."""


@dataclass(frozen=True)
class Entry:
    """A registered problem: ``module.factory(**params)`` builds it; ``contacts``: whether its
    dynamics have contact phases (their compiled kernels are of another type than the other
    robot tasks', which ``optdyn solve`` compiles ahead for on a stand-in: :mod:`optdyn.apps.cli`)."""

    module: str
    factory: str
    description: str
    scenarios: tuple[str, ...] = ()
    contacts: bool = False


REGISTRY: dict[str, Entry] = {
    "arm-obstacle": Entry(
        "arm_obstacle", "make",
        "UR5 moves between two rest configurations around a spherical obstacle "
        "(Neunert et al. 2016 Sec. IV-B): 4 s, 20 intervals × 4 RK4 steps, collision points on the last three links.",
        ("bent", "straight")),
    "ur5-reach": Entry(
        "ur5_reach", "make",
        "UR5 brings tool0 to a Cartesian target from rest (the DDP/iLQR speed reference)."),
    "space-manipulator": Entry(
        "space_manipulator", "make",
        "UR5 on a free-floating 300 kg satellite (unactuated free-flyer base, zero gravity) brings tool0 "
        "to a target at rest in 3 s; option attitude_bound (rad) bounds the satellite's rotation; option "
        "station=true holds tool0 at its station relative to the satellite instead (station keeping under MPC)."),
    "quadruped": Entry(
        "quadruped", "make",
        "Solo-12 (example-robot-data; or any robot: model=, feet=, standing=) walks, trots or jumps forward on "
        "flat ground: contact phases with impulses at touchdown, swing feet on arcs, multiple shooting from the "
        "standing guess.",
        ("walk", "trot", "jump"), contacts=True),
    "biped": Entry(
        "biped", "make",
        "Talos' legs (example-robot-data, upper body locked at half-sitting; or any robot: model=, soles=, "
        "standing=, sole_half_lengths=) walk forward on two 6D soles: single and double supports, impulses at "
        "touchdown, each sole's wrench in its contact wrench cone; or stand on both.",
        ("walk", "stand"), contacts=True),
    "panda-reach": Entry(
        "panda_reach", "make",
        "Franka Panda (example-robot-data) brings its hand to a Cartesian target from rest within its torque "
        "box: several local optima; ships the solver options that reach the best known to DDP and iLQR."),
    "arm-pose": Entry(
        "arm_pose", "make",
        "An arm of example-robot-data (the scenario) brings its tool to a seeded 6D pose and stops there, within "
        "its torque box: the same weights for every robot (the solvers' convergence benchmark).",
        ("panda", "ur3", "ur5", "ur10", "kinova", "xarm7", "z1", "bravo7", "so101", "tiago")),
    "pendulum": Entry(
        "pendulum", "make_pendulum", "Single pendulum swing-up."),
    "double-pendulum": Entry(
        "pendulum", "make_double_pendulum", "Double pendulum swing-up."),
}

MODULES = frozenset(e.module for e in REGISTRY.values())


def names() -> list[str]:
    """Registered problem names, sorted."""
    return sorted(REGISTRY)


def entry(name: str) -> Entry:
    """Registry entry of ``name`` (dashes or underscores); ValueError listing names otherwise."""
    key = name.replace("_", "-") if isinstance(name, str) else name
    if key not in REGISTRY:
        raise ValueError(f"name: unknown problem {name!r}; known problems: {', '.join(names())}")
    return REGISTRY[key]


def describe(name: str) -> str:
    """One-line description of problem ``name`` with its scenarios."""
    e = entry(name)
    return e.description + (f" Scenarios: {', '.join(e.scenarios)}." if e.scenarios else "")


def factory(name: str):
    """The factory function of problem ``name`` (picklable: a module-level function), e.g. for
    ``optdyn.sweep(problems.factory("pendulum"), grid=...)``; ValueError for unknown names."""
    e = entry(name)
    try:
        module = importlib.import_module(f"{__name__}.{e.module}")
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{e.module}":
            raise
        raise ValueError(f"name: problem {name!r} is registered but its module "
                         f"problems.{e.module} is not available") from None
    return getattr(module, e.factory)


def get(name: str, **params):
    """Build problem ``name`` with the factory's keyword parameters (e.g. ``scenario="bent"``).

    Unknown names and parameters raise ValueError listing the known ones.
    """
    make = factory(name)
    accepted = inspect.signature(make).parameters
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ParameterError(f"params: problem {name!r} takes no parameter {', '.join(map(repr, unknown))}; "
                             f"its parameters: {', '.join(accepted)}")
    return make(**params)


def __getattr__(attr: str):
    """``problems.arm_obstacle`` etc. import their module on first access."""
    if attr in MODULES:
        return importlib.import_module(f"{__name__}.{attr}")
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


__all__ = ["Entry", "ParameterError", "REGISTRY", "names", "entry", "describe", "factory", "get"]
