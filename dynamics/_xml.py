"""Reading the XML of robot descriptions (URDF, SRDF) with :mod:`xml.etree.ElementTree`:
the document from a path or a string, and attributes as names or finite numbers, every
problem a ValueError naming the element and what was expected."""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np


def parse(source: str | os.PathLike, kind: str) -> tuple[ET.Element, str | None]:
    """(the ``<robot>`` element, the file's path or None) of ``source``: a string whose first
    non-blank character is ``<`` is XML, anything else a path. ``kind`` ("urdf", "srdf")
    starts the messages of the ValueErrors for a missing file or malformed XML."""
    path = None
    if isinstance(source, str) and source.lstrip().startswith("<"):
        text, where = source, f"{kind.upper()} string"
    else:
        try:
            path = os.fspath(source)
        except TypeError:
            raise ValueError(f"{kind}: expected a file path or an XML string, got {source!r}") from None
        if not os.path.isfile(path):
            raise ValueError(f"{kind}: file {path!r} not found")
        with open(path, encoding="utf-8-sig") as fh:
            text, where = fh.read(), path
    try:
        root = ET.fromstring(text.lstrip())
    except ET.ParseError as e:
        raise ValueError(f"{kind}: malformed XML in {where}: {e}") from None
    if root.tag != "robot":
        raise ValueError(f"{kind}: root element must be <robot>, got <{root.tag}>")
    return root, path


def required(el: ET.Element, attr: str, where: str) -> str:
    """Attribute ``attr`` of ``el``, non-empty; ValueError naming ``where`` otherwise."""
    value = el.get(attr)
    if value is None or not value.strip():
        raise ValueError(f"{where} needs a non-empty {attr!r} attribute")
    return value


def vector(el: ET.Element, attr: str, n: int, where: str, default: str | None = None,
           unbounded: bool = False) -> np.ndarray:
    """Attribute ``attr`` of ``el`` as n finite numbers (``default`` if absent, else required).

    ``unbounded`` also accepts +inf (limits).
    """
    text = el.get(attr, default)
    if text is None:
        raise ValueError(f"{where}: expected attribute {attr!r} with {n} numbers")
    try:
        values = np.array([float(s) for s in text.split()])
    except ValueError:
        raise ValueError(f"{where}: attribute {attr}={text!r} is not {n} numbers") from None
    if values.shape != (n,) or not np.all(np.isfinite(values) | (unbounded & (values == np.inf))):
        raise ValueError(f"{where}: attribute {attr}={text!r}: expected {n} finite numbers")
    return values


def number(el: ET.Element, attr: str, where: str, default: str | None = None, unbounded: bool = False) -> float:
    """Attribute ``attr`` of ``el`` as one finite number (:func:`vector`)."""
    return float(vector(el, attr, 1, where, default, unbounded)[0])
