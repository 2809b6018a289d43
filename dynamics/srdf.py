"""Read what an SRDF (MoveIt's Semantic Robot Description Format) says about a model:
its named reference configurations, its disabled collision pairs and its rotor parameters,
as Pinocchio's SRDF parser reads them (``loadReferenceConfigurations``,
``removeCollisionPairs``, ``loadRotorParameters``).

* ``<group_state name="standing"><joint name="..." value="..."/>...</group_state>``: a
  reference configuration q (nq,) of the model. Joints the state does not name keep their
  neutral value (:func:`dynamics.joints.neutral`); a joint's ``value`` gives its nq numbers
  in the model's convention — a free-flyer named ``root_joint`` its seven (x, y, z, qx, qy,
  qz, qw), a continuous joint its angle (Pinocchio stores (cos θ, sin θ) instead).
* ``<disable_collisions link1="..." link2="..."/>``: pairs of links (frames of the model)
  whose collisions are not checked.
* ``<rotor_params><joint name="..." mass="..." gear_ratio="..."/></rotor_params>``: per
  1-DoF joint, the rotor inertia I_r (kg·m²; the attribute is called ``mass``) and the gear
  ratio n, and the armature I_r n² they add to the joint's diagonal entry of the
  joint-space inertia matrix: :attr:`SRDF.armature` (nv,), which
  ``model.with_armature(srdf.armature)`` gives the model's dynamics (Pinocchio's
  ``loadRotorParameters`` and ``model.armature = rotorInertia · rotorGearRatio²``). Loading
  an SRDF leaves the model as it is.

Names the model does not have — a joint or link of another variant of the robot sharing
the SRDF (Solo-8 with Solo's SRDF), a joint the model loaded as fixed or locked — raise a
ValueError naming them, or, with ``unknown="ignore"``, are skipped as Pinocchio skips them
(``unknown="warn"``: skipped, one warning naming them all).
A malformed file, a value of the wrong size or a state defined twice raise ValueError
(where Pinocchio prints a message and keeps the joint's neutral value, or the first state).
"""
from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from ._xml import number, parse, required, vector
from .joints import neutral
from .model import Model

UNKNOWN = ("raise", "ignore", "warn")
"""What :func:`load_srdf` does with names the model does not have."""


@dataclass(frozen=True)
class SRDF:
    """What an SRDF says about a model (module docstring).

    ``reference_configurations``: {state name: q (nq,)}, read-only arrays;
    ``disabled_collisions``: ((link1, link2), ...) in the file's order;
    ``rotor_inertia`` and ``gear_ratio``: {joint name: I_r (kg·m²)} and {joint name: n};
    ``armature`` (nv,): I_r n² at each such joint's velocity entry, 0 elsewhere;
    ``xml``: the parsed ``<robot>`` element, for the blocks this reader does not interpret
    (groups, end effectors, a robot's own ``<specificities>``).
    """

    reference_configurations: dict[str, np.ndarray]
    disabled_collisions: tuple[tuple[str, str], ...]
    rotor_inertia: dict[str, float]
    gear_ratio: dict[str, float]
    armature: np.ndarray
    xml: ET.Element


def load_srdf(model: Model, source: str | os.PathLike, unknown: str = "raise") -> SRDF:
    """What the SRDF ``source`` (a file path, or XML text starting with ``<``) says about
    ``model``: its reference configurations, disabled collision pairs and rotor parameters
    (module docstring). ``unknown``: "raise" (a ValueError naming a joint or link the model
    does not have), "ignore" (skip it, as Pinocchio does) or "warn" (skip it, with one
    UserWarning naming every name skipped)."""
    if not isinstance(model, Model):
        raise ValueError(f"model: expected a dynamics.Model, got {type(model).__name__}")
    if unknown not in UNKNOWN:
        raise ValueError(f"unknown: expected one of {', '.join(UNKNOWN)}, got {unknown!r}")
    robot, _ = parse(source, "srdf")
    known = _Names(model, unknown != "raise")
    inertia, ratio = _rotor_parameters(robot, known)
    armature = np.zeros(model.nv)
    for name, value in inertia.items():
        armature[model.idx_vs[model.joint_index(name)]] = value * ratio[name] ** 2
    armature.setflags(write=False)
    srdf = SRDF(_reference_configurations(robot, model, known), _disabled_collisions(robot, known),
                inertia, ratio, armature, robot)
    if unknown == "warn" and known.skipped:
        warnings.warn(f"srdf: skipped what model {model.name!r} does not have: {', '.join(known.skipped)}",
                      stacklevel=2)
    return srdf


class _Names:
    """The model's joint and frame names; whether a name the model lacks is skipped, and
    those skipped (``skipped``: "joint 'name'" or "link 'name'", once each)."""

    def __init__(self, model: Model, skip: bool) -> None:
        self.model, self.skip, self.skipped = model, skip, []
        self.joints, self.frames = set(model.joint_names), set(model.frame_names)

    def joint(self, name: str, where: str) -> bool:
        """True if the model has joint ``name``; False if not and skipped; else ValueError."""
        return self._known(name, self.joints, "joint", self.model.joint_names, where)

    def frame(self, name: str, where: str) -> bool:
        """True if the model has frame (link) ``name``; False if not and skipped; else ValueError."""
        return self._known(name, self.frames, "link", self.model.frame_names, where)

    def _known(self, name: str, names: set, what: str, listed: tuple, where: str) -> bool:
        if name in names:
            return True
        if self.skip:
            if f"{what} {name!r}" not in self.skipped:
                self.skipped.append(f"{what} {name!r}")
            return False
        raise ValueError(f"srdf: {where} names {what} {name!r}, which model {self.model.name!r} does not have "
                         f"(its {what}s: {', '.join(listed)}); unknown='ignore' skips it")


def _reference_configurations(robot: ET.Element, model: Model, known: _Names) -> dict[str, np.ndarray]:
    """{name: q} of every ``<group_state>`` (module docstring)."""
    states = {}
    for state in robot.findall("group_state"):
        name = required(state, "name", "srdf: <group_state>")
        where = f"<group_state {name!r}>"
        if name in states:
            raise ValueError(f"srdf: {where} is defined twice")
        q = neutral(model)
        for joint in state.findall("joint"):
            jname = required(joint, "name", f"srdf: {where} <joint>")
            if known.joint(jname, where):
                i = model.joint_index(jname)
                k, n = model.idx_qs[i], model.nqs[i]
                q[k: k + n] = vector(joint, "value", n, f"srdf: {where} joint {jname!r}")
        q.setflags(write=False)
        states[name] = q
    return states


def _disabled_collisions(robot: ET.Element, known: _Names) -> tuple[tuple[str, str], ...]:
    """The (link1, link2) of every ``<disable_collisions>`` whose links the model has."""
    pairs = []
    for el in robot.findall("disable_collisions"):
        pair = tuple(required(el, a, "srdf: <disable_collisions>") for a in ("link1", "link2"))
        if all([known.frame(link, f"<disable_collisions {pair[0]!r} {pair[1]!r}>") for link in pair]):
            pairs.append(pair)
    return tuple(pairs)


def _rotor_parameters(robot: ET.Element, known: _Names) -> tuple[dict[str, float], dict[str, float]]:
    """({joint: rotor inertia}, {joint: gear ratio}) of the first ``<rotor_params>`` (the one
    Pinocchio reads), for 1-DoF joints the model has."""
    inertia, ratio = {}, {}
    block = robot.find("rotor_params")
    for joint in [] if block is None else block.findall("joint"):
        name = required(joint, "name", "srdf: <rotor_params> <joint>")
        where = f"srdf: <rotor_params> joint {name!r}"
        if name in inertia:
            raise ValueError(f"{where} is given twice")
        if not known.joint(name, "<rotor_params>"):
            continue
        if known.model.nvs[known.model.joint_index(name)] != 1:
            raise ValueError(f"{where}: rotor parameters apply to 1-DoF joints only")
        inertia[name], ratio[name] = number(joint, "mass", where), number(joint, "gear_ratio", where)
    return inertia, ratio
