"""Seeing a result: the meshcat scene in the browser (:mod:`optdyn.viz.scene`, loaded
on first use) and matplotlib plots (:mod:`optdyn.viz.plots`)."""
from importlib import import_module


def __getattr__(name: str):
    """The scene's functions (``view``, ``save_html``, …) load meshcat only when first used."""
    if name.startswith("__"):
        raise AttributeError(f"module 'optdyn.viz' has no attribute {name!r}")
    return getattr(import_module(".scene", __name__), name)
