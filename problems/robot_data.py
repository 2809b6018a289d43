"""The robots of example-robot-data that ready tasks load (an optional package, in the
project's dev extra; the tasks that need it raise ValueError without it)."""
from __future__ import annotations

import os
import warnings

from dynamics import Model, load_urdf


def robot_files(relative: str, task: str) -> tuple[str, str]:
    """(example-robot-data's robots directory, which holds ``relative``; its share directory,
    which resolves the URDFs' ``package://example-robot-data/robots/…`` meshes); ValueError
    naming ``task`` if the package is not installed."""
    try:
        import example_robot_data as erd
    except ImportError:
        raise ValueError(f"{task}: needs the example-robot-data package (pip install "
                         "example-robot-data-loaders, or the project's dev extra)") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robots = erd.getModelPath(relative)
    return robots, os.path.dirname(os.path.dirname(robots))


def load_robot(relative: str, task: str, root_joint: str | None = "free-flyer", **options) -> Model:
    """The robot of example-robot-data's URDF ``relative`` on ``root_joint`` (None: a fixed
    base), its meshes resolved (:func:`robot_files`); ``options`` go to :func:`dynamics.load_urdf`."""
    robots, share = robot_files(relative, task)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the URDFs' dummy inertias and meshes
        return load_urdf(os.path.join(robots, relative), root_joint=root_joint, package_dirs=share, **options)
