"""The documentation site of docs/: it builds strictly and offline, and its code runs.

* ``mkdocs build --strict`` (the configuration of mkdocs.yml: Material theme, mkdocstrings
  reading the docstrings) builds the site into a temporary directory; a broken link, a
  missing page of the navigation or an object mkdocstrings cannot find fails the build.
* Every ```python block of every page under docs/ is executed: one test per page, the
  blocks of a page in order in one namespace (a page reads top to bottom as one script), in a
  temporary working directory so that the files a tutorial writes land there. A block that
  raises fails its page's test, naming the block's first line.
* README.md stays within 150 lines and its links into docs/ resolve; BENCHMARKS.md opens with
  its summary and lists exactly the sections the benchmark pages hold.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```\s*$", re.M | re.S)
PAGES = sorted(p for p in DOCS.rglob("*.md") if FENCE.search(p.read_text()))


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """(line number, source) of each ```python block of ``page``, in order."""
    text = page.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in FENCE.finditer(text)]


def test_site_builds_strictly(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")  # Material's notice about its successor
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                          "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "api" / "optdyn" / "index.html").is_file()


def test_every_page_with_code_is_collected():
    assert len(PAGES) >= 7, [p.name for p in PAGES]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_page_code_runs(page, tmp_path, monkeypatch):
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__", "__file__": str(tmp_path / page.name)}
    for line, source in python_blocks(page):
        try:
            exec(compile(source, f"{page.relative_to(DOCS)}:{line}", "exec"), namespace)
        except Exception as err:  # noqa: BLE001 - name the block, keep the traceback
            raise AssertionError(f"{page.relative_to(DOCS)}, block at line {line} "
                                 f"({source.strip().splitlines()[0]!r}) raised {err!r}") from err
        finally:
            import matplotlib.pyplot as plt
            plt.close("all")
    assert os.getcwd() == str(tmp_path)


def test_readme_is_short_and_links_into_the_docs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    links = re.findall(r"\]\(((?:docs/|BENCHMARKS)[^)#]*)", readme)
    assert links and all((ROOT / link).is_file() for link in links), [l for l in links if not (ROOT / l).is_file()]


def test_benchmarks_open_with_the_summary_and_name_every_section():
    text = (ROOT / "BENCHMARKS.md").read_text()
    assert re.findall(r"^## .*", text, re.M)[0].startswith("## Summary")
    pages = "".join(p.read_text() for p in (DOCS / "benchmarks").glob("*.md"))
    listed = re.findall(r"`([^`]+)`", "".join(re.findall(r"\(sections ([^)]*)\)", text)))
    written = re.findall(r"<!-- ([^:]+):start -->", pages)
    assert listed and sorted(listed) == sorted(written)
