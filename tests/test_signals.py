"""Real processes and real signals: Ctrl-C of the command line, the viewer's server
outliving nobody, unwritable outputs refused before solving, the compile notice.

Ctrl-C-to-exit latency is measured by ``benchmarks/bench_interrupt.py``; the timeouts
here only keep a hung child from hanging the suite.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from optdyn.apps.cli import main

ENV = dict(os.environ, PYTHONUNBUFFERED="1")


def _start(*argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "optdyn", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV)


def _read_until(proc: subprocess.Popen, pattern: str) -> list[str]:
    """stdout lines up to and including the first matching ``pattern`` (regex)."""
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if re.search(pattern, line):
            return lines
    raise AssertionError(f"{pattern!r} never printed; stdout: {''.join(lines)}; stderr: {proc.stderr.read()}")


def test_ctrl_c_during_a_solve_prints_the_summary_and_exits_130():
    proc = _start("solve", "arm-obstacle", "--max-iter", "100000")
    _read_until(proc, r"^\s+3\s+cost ")  # in the middle of the solve
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert re.search(r"^status\s+interrupted \(stopped by Ctrl-C", out, flags=re.M), out
    assert re.search(r"^cost\s+\S+", out, flags=re.M) and re.search(r"^clearance\s+min", out, flags=re.M)
    assert "Traceback" not in err and "SystemError" not in err
    assert err.strip().splitlines()[-1].startswith("optdyn solve: interrupted (Ctrl-C)")


def _port_closed(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) != 0


def _wait_closed(port: int, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if _port_closed(port):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("how", ["sigterm_cli", "sigint_cli", "sigkill_python"])
def test_the_viewer_server_ends_with_its_parent(how):
    if how == "sigkill_python":  # the parent dies without running any handler at all
        script = textwrap.dedent("""
            import time
            from optdyn.viz.scene import serve_local
            vis = serve_local()
            print("meshcat viewer:", vis.url(), flush=True)
            time.sleep(120)
        """)
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=ENV)
    else:
        proc = _start("solve", "pendulum", "--view")
    lines = _read_until(proc, r"meshcat viewer: http://127\.0\.0\.1:(\d+)")
    port = int(re.search(r"127\.0\.0\.1:(\d+)", lines[-1]).group(1))
    assert not _port_closed(port)
    if how != "sigkill_python":
        _read_until(proc, r"serving until Ctrl-C")
    proc.send_signal({"sigterm_cli": signal.SIGTERM, "sigint_cli": signal.SIGINT,
                      "sigkill_python": signal.SIGKILL}[how])
    try:
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # a failing run leaves neither the CLI nor (with it) its server behind
            proc.kill()
            proc.communicate()
    assert proc.returncode == {"sigterm_cli": 143, "sigint_cli": 0, "sigkill_python": -9}[how]
    assert _wait_closed(port), f"an orphan server still listens on port {port}"


@pytest.mark.parametrize("argv, option", [
    (("solve", "pendulum", "--save", "{missing}/r.npz"), "--save"),
    (("solve", "pendulum", "--html", "{readonly}/r.html"), "--html"),
    (("solve", "pendulum", "--html", "{tmp}"), "--html"),
    (("compare", "pendulum", "--plot", "{missing}/c.png"), "--plot"),
    (("show", "{tmp}/r.npz", "--html", "{missing}/r.html"), "--html"),
])
def test_unwritable_outputs_are_refused_before_solving(tmp_path, capsys, monkeypatch, argv, option):
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    monkeypatch.setattr(os, "access", lambda path, mode: os.path.abspath(path) != str(readonly))  # root ignores chmod
    paths = dict(missing=str(tmp_path / "missing"), readonly=str(readonly), tmp=str(tmp_path))
    called = []
    monkeypatch.setattr(sys.modules["optdyn.solvers.solve"], "solve", lambda *a, **k: called.append(a))
    monkeypatch.setattr(sys.modules["optdyn.apps.compare"], "compare", lambda *a, **k: called.append(a))
    code = main([a.format(**paths) for a in argv])
    out, err = capsys.readouterr()
    assert code == 1 and not called and "solving" not in out
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"optdyn {argv[0]}: error: {option}: "), err


PROBE = '''
import numpy as np
from numba import njit

@njit(cache=True)
def probe(x):
    return 2.0 * x + 1.0
'''


def test_compile_notice_once_per_process_and_only_on_a_cold_cache(tmp_path):
    """The notice comes from numba's compile event: printed when (and only when) a kernel
    of the project is really compiled, i.e. neither memory nor the disk cache has it."""
    package = tmp_path / "optdyn_probe"
    package.mkdir()
    (package / "__init__.py").write_text(PROBE)
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        from optdyn.solvers import runtime
        runtime.PACKAGES += ("optdyn_probe",)
        import optdyn_probe
        assert optdyn_probe.probe(1.0) == 3.0 and optdyn_probe.probe(2) == 5.0
        print(runtime.COMPILATION.count, runtime.COMPILATION.seconds > 0)
    """)

    def run():
        r = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                           timeout=300, env=ENV)
        assert r.returncode == 0, r.stderr
        return r.stdout.split(), r.stderr

    (count, timed), err = run()  # cold: two signatures compiled, one notice
    assert count == "2" and timed == "True" and err.count("optdyn: compiling numba kernels") == 1
    (count, timed), err = run()  # warm: loaded from the disk cache, nothing compiled, no notice
    assert count == "0" and timed == "False" and "compiling" not in err
