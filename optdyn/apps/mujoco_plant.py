"""MuJoCo as the plant of a closed loop: the controller's robot on a floor, in a physics engine.

A :class:`MujocoPlant` builds the MuJoCo model (Todorov, Erez & Tassa 2012, "MuJoCo: a physics
engine for model-based control") of the library's :class:`dynamics.Model` through MuJoCo's
model-editing API (``MjSpec``), body by body, so that both see the same tree, placements and
inertias (the URDF's, with its fixed joints and locked joints folded in; a URDF path is loaded
by :func:`dynamics.load_urdf`, whose ``package_dirs`` resolve its ``package://`` meshes as
everywhere else; the plant itself loads no mesh: its only collision shapes are the feet's):

* body i of the model is a MuJoCo body placed by the joint placement of joint i in its parent
  (Pinocchio's convention: the body frame is the joint frame), with the model's mass, centre
  of mass and inertia about it (where a body's rotational inertia is singular — a point mass, a
  thin rod, as on the pendulums — every body's principal moments are raised to at least
  :data:`INERTIA_FLOOR`, and where a body is massless — the virtual links between the 1-DoF
  joints of a hip, as in example-robot-data's human — every body's mass to at least
  :data:`MASS_FLOOR`: MuJoCo takes positive ones only); it is named as the model's body, but
  for a link named "world" (the UR arms' URDFs root at one), which MuJoCo's world body already
  is: "world_link"; a free-flyer root is a MuJoCo free
  joint, revolute and prismatic joints hinges and slides along the model's axes (a spherical or
  planar joint, which one motor cannot drive, raises ValueError); every frame of the model is a
  site of that name (pushes and foot positions are read there);
* every joint but a free-flyer root is driven by a torque actuator (a motor of gear 1), its
  torque clamped to the URDF's ``<limit effort>`` where that is finite (the actuator's
  control range; an effort of 0, an empty range MuJoCo refuses, raises ValueError unless the
  plant's ``effort=`` replaces it) — the controller's own bounds are its business;
* the model's joint damping and friction (``Model.damping``, ``Model.friction``: the URDF's
  ``<dynamics damping friction>``) become the joint's viscous damping and dry friction
  (``frictionloss``) with ``joint_dynamics=True`` (default) — a model mismatch, since
  the library's dynamics have neither (Solo-12's and Talos' URDFs give zeros); position limits
  are not enforced (no joint-limit constraints); the model's reflected rotor inertias
  (``Model.armature``, Pinocchio's and MuJoCo's armature, added to the joint-space inertia
  matrix's diagonal by both) are the joints' armature;
* a floor plane, and a collision shape on each contact frame ``feet``: a sphere of
  ``foot_radius`` centred on a point foot (``Contact(kind="3d")`` or a frame name), a thin box of
  ``sole_half_lengths`` whose lower face holds a 6D sole (``kind="6d"``). The floor lies where
  the frames touch it: ``floor`` is the height of the contact frames standing (a sphere's
  plane ``foot_radius`` lower), so that the plant stands where the controller's task stands.
  The robot's other bodies have no collision geometry.

Contact (MuJoCo's soft constraints, ``solref`` = (time constant, damping ratio) and
``solimp``): ``contact="stiff"`` (default) — a time constant of 10 ms (at least two plant
steps) critically damped and an impedance of 0.99 → 0.999 over 1 mm: Solo-12 standing
penetrates the floor by 0.05 mm (0.78 mm with MuJoCo's defaults), and its feet take the
forces the controller plans (within 3 % at the first steps). "soft" keeps MuJoCo's defaults
((0.02, 1), (0.9, 0.95, 1 mm)), under which Solo-12's trot (one iLQR iteration per step)
falls within 0.44 s; a pair (solref, solimp) sets them (a solimp of three numbers, as MJCF takes it,
with MuJoCo's default midpoint 0.5 and power 2). With time constants of 2 or 5 ms
(harder still) that trot diverges after a 12 N side push that it survives at 10 ms, measured. Friction ``friction`` (μ, sliding) on elliptic cones,
the implicit-in-velocity integrator ("implicitfast") at ``timestep``.

The step, 0.5 ms by default. A closed loop applies the controller's feedback policy
u = ū + K (x ⊖ x̄) at every plant step from the state at the step's start
(:func:`optdyn.simulate`): explicitly, where MuJoCo's integrator treats only the model's own
velocity-dependent forces implicitly. A joint's own velocity gain K_v,j (the entry of K on
its velocity) acts as a damper integrated by explicit Euler, stable while h·K_v,j / M_jj (M_jj
the joint-space inertia's diagonal) stays below 2, free of oscillation below 1. On the
trot's first horizon (iLQR, 25 intervals) the largest h·K_v,j / M_jj at h = 1 ms is 0.59 for
Solo-12 and 0.64 for ANYmal, but 1.72 for HyQ and 1.75 for Go1, whose light shanks get stiff
gains: at 1 ms their trots diverge within 2.3 s without a push, at 0.5 ms all four trot for
10 s, also through a side push of a quarter of their weight, measured.

States map both ways by joint name (:meth:`MujocoPlant.to_mujoco`, :meth:`MujocoPlant.state`):
a free-flyer's q [p, (qx, qy, qz, qw)] is MuJoCo's qpos [p, (qw, qx, qy, qz)], its local
twist v = (R^T ṗ, ω_local) MuJoCo's qvel (ṗ in the world frame, ω in the body frame); the
other joints' entries are moved to their addresses, so that a plant whose joints come in
another order still maps.
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

import dynamics
from dynamics.model import FREE_FLYER, JTYPE, PRISMATIC, REVOLUTE, Model, spatial_inertia_is_valid

INERTIA_FLOOR = 1e-12
"""The least principal moment of inertia, kg·m², that MuJoCo's compiler gives a body (its
``boundinertia``) in a model with a body whose rotational inertia is not positive definite: a
change of 1e-12 of a 1 kg, 1 m pendulum's inertia about its hinge."""
MASS_FLOOR = 1e-12
"""The least mass, kg, that MuJoCo's compiler gives a body (its ``boundmass``) in a model with
a massless moving body, whose moments are then raised to :data:`INERTIA_FLOOR` too."""
CONTACTS = ("stiff", "soft")
"""Named contact parameters (module docstring)."""

INSTALL = "pip install optdyn[sim]"
"""How to install MuJoCo for the plant."""


def mujoco_module():
    """The ``mujoco`` package, imported on first use (ValueError saying how to install it)."""
    try:
        import mujoco
    except ImportError:
        raise ValueError(f"plant: 'mujoco' needs the MuJoCo package ({INSTALL}, or "
                         "pip install mujoco)") from None
    return mujoco


SOLIMP_SHAPE = [0.5, 2.0]
"""MuJoCo's default midpoint and power of ``solimp``'s sigmoid, for a ``solimp`` of three numbers
(as MJCF accepts; MjSpec, which builds the plant, takes five)."""


def _contact_parameters(contact, timestep: float) -> tuple[list[float], list[float]]:
    """(solref, solimp) of ``contact`` (module docstring)."""
    if isinstance(contact, str):
        if contact == "stiff":
            return [max(0.01, 2.0 * timestep), 1.0], [0.99, 0.999, 0.001, *SOLIMP_SHAPE]
        if contact == "soft":
            return [0.02, 1.0], [0.9, 0.95, 0.001, *SOLIMP_SHAPE]
    elif isinstance(contact, Sequence) and len(contact) == 2:
        solref, solimp = (np.asarray(c, dtype=float).ravel() for c in contact)
        if solref.size == 2 and solimp.size in (3, 5) and np.all(np.isfinite(solref)) \
                and np.all(np.isfinite(solimp)):
            return list(solref), list(solimp) + SOLIMP_SHAPE[solimp.size - 3:]
    raise ValueError(f"contact: expected one of {', '.join(CONTACTS)} or a pair (solref (2,), solimp (3 or 5,)), "
                     f"got {contact!r}")


def _check_physical(model: Model) -> None:
    """ValueError naming the first body whose inertia no mass distribution has (the triangle
    inequality violated: :func:`dynamics.model.spatial_inertia_is_valid`, strict), which
    :func:`dynamics.load_urdf` loads with a warning and MuJoCo's compiler refuses."""
    for name, row in zip(model.body_names, model.inertia):
        error = spatial_inertia_is_valid(row[0], row[4:13].reshape(3, 3))[0]
        if error:
            raise ValueError(f"model_or_urdf: body {name!r}: {error}; MuJoCo takes physical inertias only "
                             "(dynamics.load_urdf loads it with a warning)")


def _positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: expected a finite number > 0, got {value!r}")
    return float(value)


def _quat_wxyz(R: np.ndarray) -> np.ndarray:
    """MuJoCo's (w, x, y, z) quaternion of the rotation ``R``."""
    mujoco = mujoco_module()
    q = np.empty(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(R, dtype=float).ravel())
    return q


def _feet(model: Model, feet) -> list[tuple[str, str]]:
    """``feet`` as (frame, "3d" | "6d"); ValueError naming an unknown frame."""
    out = []
    for f in feet:
        frame, kind = (f, "3d") if isinstance(f, str) else (getattr(f, "frame", None), getattr(f, "kind", None))
        if not isinstance(frame, str) or kind not in ("3d", "6d"):
            raise ValueError(f"feet: expected frame names or dynamics.Contact objects, got {f!r}")
        if frame not in model.frame_names:
            raise ValueError(f"feet: robot {model.name!r} has no frame {frame!r}; its frames: "
                             f"{', '.join(model.frame_names)}")
        if model.frame(frame).body < 0:
            raise ValueError(f"feet: frame {frame!r} is fixed on the world; a foot must move")
        out.append((frame, kind))
    return out


class MujocoPlant:
    """The robot of ``model_or_urdf`` (a :class:`dynamics.Model`, or a URDF path loaded on a
    free-flyer with ``package_dirs``) as a MuJoCo model on a floor (module docstring).

    Args:
        timestep: the plant's step, s (module docstring). friction: μ of the feet on the floor.
        contact: "stiff", "soft" or (solref, solimp) (module docstring).
        feet: contact frames: names (point feet) or :class:`dynamics.Contact` (kind "3d" or "6d").
        floor: height of the contact frames when they touch the floor, m.
        foot_radius: the point feet's spheres, m; sole_half_lengths: the 6D soles' boxes (X, Y), m.
        joint_dynamics: apply the model's joint damping and friction (the URDF's).
        effort: the torque clamp (N·m or N) of every actuated joint instead of the URDF's
            ``<limit effort>`` (None: the URDF's; Solo-12's 1000 N·m is a placeholder).

    ``mj_model``, ``mj_data``: MuJoCo's model and data; ``model``: the library's model;
    ``warnings``: MuJoCo's warnings during the steps since the last :meth:`reset` (a diverging
    simulation's "Nan, Inf or huge value in QACC at DOF …"), kept here instead of printed and
    written to a MUJOCO_LOG.TXT in the working directory.
    """

    def __init__(self, model_or_urdf: Model | str | os.PathLike, timestep: float = 5e-4, friction: float = 1.0,
                 contact="stiff", feet: Sequence = (), floor: float = 0.0, foot_radius: float = 0.01,
                 sole_half_lengths: Sequence[float] = (0.1, 0.05), package_dirs=None,
                 joint_dynamics: bool = True, effort: float | None = None) -> None:
        mujoco = mujoco_module()
        if isinstance(model_or_urdf, Model):
            model = model_or_urdf
        elif isinstance(model_or_urdf, (str, os.PathLike)):
            model = dynamics.load_urdf(model_or_urdf, root_joint="free-flyer", package_dirs=package_dirs)
        else:
            raise ValueError(f"model_or_urdf: expected a dynamics.Model or a URDF path, got "
                             f"{type(model_or_urdf).__name__}")
        self.timestep = _positive(timestep, "timestep")
        self.friction = _positive(friction, "friction")
        if isinstance(floor, bool) or not isinstance(floor, (int, float, np.integer, np.floating)) \
                or not np.isfinite(floor):
            raise ValueError(f"floor: expected a finite height in m, got {floor!r}")
        self.model, self.feet = model, _feet(model, feet)
        self.floor = float(floor)
        self.foot_radius = _positive(foot_radius, "foot_radius")
        half = np.asarray(sole_half_lengths, dtype=float)
        if half.shape != (2,) or not np.all(np.isfinite(half)) or np.any(half <= 0):
            raise ValueError(f"sole_half_lengths: expected (X, Y) > 0 in m, got {sole_half_lengths!r}")
        solref, solimp = _contact_parameters(contact, self.timestep)
        self.contact = contact
        self.effort = None if effort is None else _positive(effort, "effort")
        _check_physical(model)
        spec = self._spec(mujoco, half, solref, solimp, joint_dynamics)
        try:
            self.mj_model = spec.compile()
        except ValueError as e:
            raise ValueError(f"model_or_urdf: MuJoCo refuses the plant's model: {' '.join(str(e).split())}") from None
        self.mj_data = mujoco.MjData(self.mj_model)
        self.warnings: list[str] = []
        self._forces, self._world = np.zeros(6), np.zeros(3)  # a contact's force in its frame, in the world's
        self._bad_state = [int(w) for w in (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQPOS,
                                            mujoco.mjtWarning.mjWARN_BADQVEL)]  # the warnings of a diverged state
        self.bind(model)

    # ---------------------------------------------------------------- the MuJoCo model
    def _spec(self, mujoco, half: np.ndarray, solref, solimp, joint_dynamics: bool):
        model = self.model
        spec = mujoco.MjSpec()
        spec.modelname = model.name
        spec.option.timestep = self.timestep
        spec.option.gravity = np.asarray(model.gravity, dtype=float)
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        if np.any(np.linalg.eigvalsh(model.inertia[:, 4:13].reshape(-1, 3, 3))[:, 0] <= 0.0):
            spec.compiler.boundinertia = INERTIA_FLOOR  # point masses, thin rods: MuJoCo takes positive moments only
        if np.any(model.inertia[:, 0] <= 0.0):
            spec.compiler.boundmass = MASS_FLOOR  # virtual links: MuJoCo takes positive masses only
        iv = model.idx_vs
        bodies = [spec.worldbody]
        types = model.topology[:, JTYPE]
        for i, name in enumerate(model.joint_names):
            parent = bodies[model.parent[i] + 1]
            T = model.joint_placement[i]
            name_in_mujoco = "world_link" if model.body_names[i] == "world" else model.body_names[i]
            body = parent.add_body(name=name_in_mujoco, pos=T[:3, 3], quat=_quat_wxyz(T[:3, :3]))
            self._inertia(body, model.inertia[i])
            friction = (model.damping[iv[i]], model.friction[iv[i]]) if joint_dynamics else (0.0, 0.0)
            self._joint(mujoco, body, name, int(types[i]), model.axis[i], friction, i)
            bodies.append(body)
        for frame in model.frames:
            T = frame.placement
            bodies[frame.body + 1].add_site(name=frame.name, pos=T[:3, 3], quat=_quat_wxyz(T[:3, :3]))
        self._actuators(mujoco, spec, types)
        self._contacts(mujoco, spec, bodies, half, solref, solimp)
        return spec

    @staticmethod
    def _inertia(body, row: np.ndarray) -> None:
        I = row[4:13].reshape(3, 3)
        body.explicitinertial = True
        body.mass = float(row[0])
        body.ipos = row[1:4]
        body.fullinertia = [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]

    def _joint(self, mujoco, body, name: str, kind: int, axis: np.ndarray, friction: tuple, i: int) -> None:
        if kind == FREE_FLYER:
            if i != 0 or not np.allclose(self.model.joint_placement[0], np.eye(4)):
                raise ValueError(f"model_or_urdf: a free-flyer must be the root joint at the world's origin; "
                                 f"joint {name!r} is not")
            body.add_freejoint(name=name)
            return
        types = {REVOLUTE: mujoco.mjtJoint.mjJNT_HINGE, PRISMATIC: mujoco.mjtJoint.mjJNT_SLIDE}
        if kind not in types:
            raise ValueError(f"model_or_urdf: joint {name!r} is {self.model.joint_types[i]}, which the MuJoCo plant "
                             f"does not drive (revolute and prismatic joints, and a free-flyer root)")
        body.add_joint(name=name, type=types[kind], axis=axis, limited=mujoco.mjtLimited.mjLIMITED_FALSE,
                       damping=friction[0], frictionloss=friction[1],
                       armature=float(self.model.armature[self.model.idx_vs[i]]))

    def _actuators(self, mujoco, spec, types: np.ndarray) -> None:
        model = self.model
        for i, name in enumerate(model.joint_names):
            if types[i] == FREE_FLYER:
                continue
            effort = model.effort_limit[model.idx_vs[i]: model.idx_vs[i] + model.nvs[i]]
            if self.effort is not None:
                effort = np.full_like(effort, self.effort)
            if effort[0] == 0.0:  # MuJoCo refuses an empty control range
                raise ValueError(f"model_or_urdf: joint {name!r} has an effort limit of 0 (its URDF's <limit effort>), "
                                 "a motor that exerts no torque; give the plant effort= (N·m) to clamp every joint "
                                 "there instead")
            act = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            act.set_to_motor()
            if np.isfinite(effort[0]):
                act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
                act.ctrlrange = [-effort[0], effort[0]]

    def _contacts(self, mujoco, spec, bodies, half: np.ndarray, solref, solimp) -> None:
        model, r = self.model, self.foot_radius
        spheres = any(kind == "3d" for _, kind in self.feet)
        if spheres and any(kind == "6d" for _, kind in self.feet):
            raise ValueError("feet: expected point feet or 6D soles, not both (the floor's height is set by either)")
        plane = self.floor - (r if spheres else 0.0)
        spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1], pos=[0, 0, plane],
                                friction=[self.friction, 0.005, 0.0001], solref=solref, solimp=solimp)
        thickness = 0.005
        for frame, kind in self.feet:
            f = model.frame(frame)
            T = f.placement
            if kind == "3d":
                options = {"type": mujoco.mjtGeom.mjGEOM_SPHERE, "size": [r, 0, 0], "pos": T[:3, 3]}
            else:
                centre = T[:3, 3] + thickness * T[:3, 2]  # the lower face on the sole frame
                options = {"type": mujoco.mjtGeom.mjGEOM_BOX, "size": [half[0], half[1], thickness], "pos": centre,
                           "quat": _quat_wxyz(T[:3, :3])}
            bodies[f.body + 1].add_geom(name=f"{frame}_contact", friction=[self.friction, 0.005, 0.0001],
                                        solref=solref, solimp=solimp, condim=3 if kind == "3d" else 6, **options)

    # ---------------------------------------------------------------- state maps
    def bind(self, model: Model, actuated=None) -> None:
        """Map states and controls between MuJoCo and the controller's ``model`` by joint name
        (its joints must be this plant's, in any order; ValueError otherwise): x = [q; v] in
        ``model``'s order, u the torques of its velocity entries ``actuated`` (default: all but
        a free-flyer root's)."""
        mujoco, m = mujoco_module(), self.mj_model
        if not isinstance(model, Model):
            raise ValueError(f"model: expected a dynamics.Model, got {type(model).__name__}")
        mine = dict(zip(self.model.joint_names, self.model.joint_types))
        theirs = dict(zip(model.joint_names, model.joint_types))
        if mine != theirs:
            raise ValueError(f"plant: its joints {mine} differ from the controller's {theirs}")
        types = model.topology[:, JTYPE]
        q_map, v_map = np.empty(model.nq, dtype=np.int64), np.empty(model.nv, dtype=np.int64)
        joint_of_v = np.empty(model.nv, dtype=np.int64)
        self._free: tuple[int, int] | None = None  # the free-flyer root's (qpos, qvel) addresses
        for i, name in enumerate(model.joint_names):
            jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
            a, b = int(m.jnt_qposadr[jid]), int(m.jnt_dofadr[jid])
            iq, iv, nq, nv = model.idx_qs[i], model.idx_vs[i], model.nqs[i], model.nvs[i]
            order = np.arange(nq)
            if types[i] == FREE_FLYER:  # (…, x, y, z, w) → (…, w, x, y, z)
                order[-4:] = [nq - 3, nq - 2, nq - 1, nq - 4]
            q_map[iq: iq + nq], v_map[iv: iv + nv], joint_of_v[iv: iv + nv] = a + order, b + np.arange(nv), i
            if types[i] == FREE_FLYER:
                self._free = (a, b)
                self._linear = model.nq + iv  # where the base's linear velocity starts in x
        if actuated is None:
            actuated = [k for k in range(model.nv) if types[joint_of_v[k]] != FREE_FLYER]
        names = [model.joint_names[joint_of_v[k]] for k in np.asarray(actuated, dtype=np.int64)]
        self._q_to_qpos, self._v_to_qvel, self.controller = q_map, v_map, model
        self.actuated_joints = tuple(names)  # the joint of each control, in the controller's order
        self._u_to_ctrl = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, n) for n in names],
                                   dtype=np.int64)
        if np.any(self._u_to_ctrl < 0):
            raise ValueError(f"actuated: the plant drives {list(mine)[1:]}, not all of {names}")
        self._sites = {f.name: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, f.name) for f in self.model.frames}
        self._foot_geoms = {frame: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"{frame}_contact")
                            for frame, _ in self.feet}
        self._foot_of_geom = [-1] * m.ngeom  # geom → its foot's row in feet, or −1
        for j, g in enumerate(self._foot_geoms.values()):
            self._foot_of_geom[g] = j
        self._floor_geom = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")

    def to_mujoco(self, x) -> tuple[np.ndarray, np.ndarray]:
        """(qpos, qvel) of the library's state x = [q; v] (module docstring)."""
        model = self.controller
        x = np.asarray(x, dtype=float)
        if x.shape != (model.nq + model.nv,):
            raise ValueError(f"x: expected a state of shape ({model.nq + model.nv},), got {x.shape}")
        q, v = x[: model.nq], x[model.nq:]
        qpos, qvel = np.empty(self.mj_model.nq), np.empty(self.mj_model.nv)
        qpos[self._q_to_qpos], qvel[self._v_to_qvel] = q, v
        if self._free is not None:
            b = self._free[1]
            qvel[b: b + 3] = self._rotation(qpos) @ qvel[b: b + 3]  # local → world linear velocity
        return qpos, qvel

    def from_mujoco(self, qpos, qvel) -> np.ndarray:
        """The library's state x = [q; v] of MuJoCo's (qpos, qvel)."""
        qpos, qvel = np.asarray(qpos, dtype=float), np.asarray(qvel, dtype=float)
        x = np.concatenate([qpos[self._q_to_qpos], qvel[self._v_to_qvel]])
        if self._free is not None:
            b, i = self._free[1], self._linear
            mujoco_module().mju_mulMatTVec(x[i: i + 3], self._rotation(qpos), qvel[b: b + 3])  # world → local
        return x

    def _rotation(self, qpos: np.ndarray) -> np.ndarray:
        """The free-flyer's world rotation in ``qpos``."""
        R = np.empty((3, 3))
        a = self._free[0] + 3  # the quaternion (w, x, y, z)
        quat = np.asarray(qpos[a: a + 4], dtype=float)
        mujoco_module().mju_quat2Mat(R.ravel(), quat / math.sqrt(quat.dot(quat)))  # quat / np.linalg.norm(quat)
        return R

    def reset(self, x) -> None:
        """Put the plant at the library's state ``x``, no force applied, at time 0."""
        mujoco = mujoco_module()
        mujoco.mj_resetData(self.mj_model, self.mj_data)
        self.warnings.clear()
        self.mj_data.qpos[:], self.mj_data.qvel[:] = self.to_mujoco(x)
        with self.warnings_kept():
            mujoco.mj_forward(self.mj_model, self.mj_data)

    def state(self) -> np.ndarray:
        """The plant's state in the library's convention."""
        return self.from_mujoco(self.mj_data.qpos, self.mj_data.qvel)

    def joint_inertias(self, xs) -> np.ndarray:
        """The diagonals (n, nv) of the joint-space inertia matrix M(q) at the library's states
        xs (n, nx), in its velocity order (MuJoCo's, computed on one scratch copy of the data)."""
        mujoco, m = mujoco_module(), self.mj_model
        d, M = mujoco.MjData(m), np.empty((m.nv, m.nv))
        out = np.empty((len(xs), m.nv))
        for x, row in zip(xs, out):
            d.qpos[:], d.qvel[:] = self.to_mujoco(x)
            mujoco.mj_fwdPosition(m, d)
            mujoco.mj_fullM(m, d, M)
            row[:] = np.diag(M)[self._v_to_qvel]
        return out

    # ---------------------------------------------------------------- stepping
    def push(self, frame: str, force) -> None:
        """Apply the world-frame ``force`` (3,) N at the origin of ``frame`` from the next step
        on (MuJoCo's ``xfrc_applied``: the force at the body's centre of mass and the moment
        of its offset); ``force`` zero removes it."""
        if frame not in self._sites:
            raise ValueError(f"frame: robot {self.model.name!r} has no frame {frame!r}; its frames: "
                             f"{', '.join(self._sites)}")
        f = np.asarray(force, dtype=float)
        if f.shape != (3,) or not np.all(np.isfinite(f)):
            raise ValueError(f"force: expected 3 finite numbers (N, world frame), got {force!r}")
        d = self.mj_data
        body = int(self.mj_model.site_bodyid[self._sites[frame]])
        if body == 0:
            raise ValueError(f"frame: {frame!r} is fixed on the world; a push needs a moving body")
        arm = d.site_xpos[self._sites[frame]] - d.xipos[body]
        d.xfrc_applied[body, :3] += f
        d.xfrc_applied[body, 3:] += np.cross(arm, f)

    def clear_pushes(self) -> None:
        """Remove every applied force."""
        self.mj_data.xfrc_applied[:] = 0.0

    def step(self, u) -> None:
        """One MuJoCo step of ``timestep`` under the joint torques ``u`` (nu,) in the library's
        order of the actuated joints; MuJoCo's warnings go to :attr:`warnings` (inside
        :meth:`warnings_kept`, as there; else around this step alone)."""
        self.mj_data.ctrl[self._u_to_ctrl] = u
        if self._keeping:
            mujoco_module().mj_step(self.mj_model, self.mj_data)
            return
        with self.warnings_kept():
            mujoco_module().mj_step(self.mj_model, self.mj_data)

    _keeping = False  # inside warnings_kept

    @contextmanager
    def warnings_kept(self) -> Iterator[None]:
        """MuJoCo's warnings go to :attr:`warnings` meanwhile (its ``mju_user_warning``; the
        process's own handler is restored after): around many :meth:`step` calls, once for all."""
        if self._keeping:
            yield
            return
        mujoco = mujoco_module()
        previous = mujoco.get_mju_user_warning()
        mujoco.set_mju_user_warning(self.warnings.append)
        self._keeping = True
        try:
            yield
        finally:
            self._keeping = False
            mujoco.set_mju_user_warning(previous)

    def diverged(self) -> bool:
        """Whether MuJoCo met a non-finite state or acceleration (its warnings)."""
        number = self.mj_data.warning.number
        return any(number[k] for k in self._bad_state) or not np.isfinite(self.mj_data.qpos).all()

    def contact_forces(self) -> dict[str, np.ndarray]:
        """{foot frame: the world-frame force (3,) N the floor exerts on it now}."""
        return dict(zip(self._foot_geoms, self.foot_forces()))

    def foot_forces(self) -> np.ndarray:
        """(feet, 3): the world-frame force N the floor exerts on each foot now, in the order of
        :attr:`feet` (:meth:`contact_forces`)."""
        m, d = self.mj_model, self.mj_data
        out = np.zeros((len(self.feet), 3))
        if not d.ncon:
            return out
        mujoco, foot, floor, local, world = mujoco_module(), self._foot_of_geom, self._floor_geom, self._forces, self._world
        frames = d.contact.frame
        for k, (g1, g2) in enumerate(d.contact.geom.tolist()):  # MuJoCo's force is on geom2, from geom1
            j, sign = (foot[g2], 1.0) if g1 == floor else (foot[g1], -1.0) if g2 == floor else (-1, 0.0)
            if j >= 0:
                mujoco.mj_contactForce(m, d, k, local)
                mujoco.mju_mulMatTVec(world, frames[k].reshape(3, 3), local[:3])
                out[j] += sign * world
        return out

    def frame_position(self, frame: str) -> np.ndarray:
        """World position (3,) of ``frame`` in the plant now."""
        if frame not in self._sites:
            raise ValueError(f"frame: robot {self.model.name!r} has no frame {frame!r}")
        return self.mj_data.site_xpos[self._sites[frame]].copy()


def plant_for(problem, **options) -> MujocoPlant:
    """The MuJoCo plant of a task ``problem`` (an :class:`optdyn.Problem`): its model, its
    contact frames (of every interval, kinds as the task's), the floor at the height of the
    frames in contact at its first interval standing at x0, 6D soles of the task's wrench
    cones' half-lengths (if it has any); ``options`` go to :class:`MujocoPlant`."""
    model = problem.model
    feet = {}
    for contacts in problem.contacts or ():
        for c in contacts:
            feet.setdefault(c.frame, c)
    first = (problem.contacts or [[]])[0]
    if first and "floor" not in options:
        q = problem.x0[: model.nq]
        options["floor"] = float(np.mean([dynamics.frame_placement(model, q, c.frame)[1][2] for c in first]))
    for c in problem.path_constraints:
        half = getattr(getattr(c, "residual", None), "half_lengths", None)
        if half is not None:
            options.setdefault("sole_half_lengths", half)
    return MujocoPlant(model, feet=list(feet.values()), **options)
