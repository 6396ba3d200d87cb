"""The installed-package check: build the wheel, install it, run it from outside the checkout.

Every other test runs against the source tree through the editable install; a device runs
the wheel. This is the default CI run's proof that the wheel works (``./dev test`` runs it
before the suite; ``./dev installed`` runs it alone):

1. build the wheel once, from a clean copy of the tree (the wheel-contents test reuses it
   through ``EDGEVOICE_WHEEL``);
2. a fresh venv whose only edgevoice is that wheel. Its third-party packages are the dev
   venv's, seen through a ``.pth`` file that names a dependency-only folder (links to every
   distribution of the dev venv except edgevoice's editable install), so pip installs
   ``wheel[all]`` with ``--no-index``: the wheel's dependency metadata must be met by the
   real packages, and nothing is downloaded;
3. ``import edgevoice`` must resolve inside the fresh venv's site-packages;
4. the CLI smoke from a scratch directory: ``--version``, ``config check``, ``doctor --json``,
   ``devices``, ``say --out``, ``transcribe``, ``aec --json`` and ``demo --fast`` to the end;
5. the tests marked ``installed`` from a copy of ``tests/`` outside the checkout, with
   ``EDGEVOICE_EXPECT_PREFIX`` set: the suite's conftest stops the run if edgevoice comes
   from anywhere but the fresh venv.

It prints a table (step, seconds, result) and exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from smoke import MAKE_AEC_PAIR, SAY_TEXT, SmokeFailed, aec_summary, check_heard, check_said, transcribe_args

REPO = Path(__file__).resolve().parents[2]
# what a clean clone does not have: the copy the wheel is built from leaves these out, so
# a stale build/lib or an in-place compiled kernel cannot stand in for a missing file
BUILD_IGNORE = (".git", ".venv", "build", "out", "__pycache__", "*.so", "*.egg-info",
                ".mypy_cache", ".ruff_cache", ".pytest_cache")
SUITE_FOLDERS = ("tests", "docs", "image", "examples")
# the dev venv's entries that are edgevoice itself (the editable install), not a dependency
EDITABLE_PREFIXES = ("__editable__", "edgevoice-", "edgevoice.", "edgevoice")


class CheckFailed(Exception):
    """A check did not hold; the message says what was seen."""


@dataclass
class Check:
    work: Path
    wheel_dir: Path
    steps: list[tuple[str, float, str, str]] = field(default_factory=list)
    failed: bool = False

    @property
    def venv(self) -> Path:
        return self.work / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def scratch(self) -> Path:
        return self.work / "scratch"

    def step(self, name: str, action: Callable[[], str]) -> None:
        if self.failed:
            self.steps.append((name, 0.0, "skipped", "an earlier step failed"))
            return
        started = time.monotonic()
        try:
            detail, result = action(), "ok"
        except (CheckFailed, SmokeFailed, subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError,
                json.JSONDecodeError, KeyError) as err:
            detail, result = str(err), "FAIL"
            self.failed = True
            print(f"[installed] FAILED: {name}: {err}", file=sys.stderr, flush=True)
        self.steps.append((name, time.monotonic() - started, result, detail))

    def run(self, argv: list[str | Path], *, ok: tuple[int, ...] = (0,), timeout: float = 300,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Run with the environment a user's shell would have: no PYTHONPATH, no dev venv on PATH."""
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSAFEPATH")}
        env["PATH"] = f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
        env["HOME"] = str(self.work / "home")
        env.pop("XDG_CONFIG_HOME", None)
        done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                              cwd=cwd or self.scratch, env=env, check=False)
        if done.returncode not in ok:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
            raise CheckFailed(f"exit {done.returncode}: {' '.join(str(a) for a in argv[:4])}: {tail}")
        return done

    def edgevoice(self, *args: str, ok: tuple[int, ...] = (0,), timeout: float = 300) -> str:
        return self.run([self.venv / "bin" / "edgevoice", *args], ok=ok, timeout=timeout).stdout

    def table(self) -> str:
        width = max(len(s[0]) for s in self.steps)
        rows = [f"{'step':<{width}}  {'time':>7}  {'result':<7}  detail", "-" * (width + 60)]
        for name, seconds, result, detail in self.steps:
            rows.append(f"{name:<{width}}  {seconds:6.1f}s  {result:<7}  {' '.join(detail.split())[:150]}")
        total = sum(s[1] for s in self.steps)
        rows.append(f"{'total':<{width}}  {total:6.1f}s  {'FAIL' if self.failed else 'ok'}")
        return "\n".join(rows)


def build_wheel(check: Check) -> str:
    source = check.work / "src" / "edgevoice"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*BUILD_IGNORE))
    shutil.rmtree(check.wheel_dir, ignore_errors=True)
    check.wheel_dir.mkdir(parents=True)
    # no build isolation: the dev venv has the build backend, and a CI box needs no download
    check.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
               "--disable-pip-version-check", "-q", "-w", check.wheel_dir, source], timeout=600)
    shutil.rmtree(source.parent)
    wheels = list(check.wheel_dir.glob("edgevoice-*.whl"))
    if len(wheels) != 1:
        raise CheckFailed(f"expected one wheel, found {wheels}")
    return f"{wheels[0].name} ({wheels[0].stat().st_size // 1024} KiB)"


def dependency_site(check: Check) -> Path:
    """Links to every distribution in this (dev) venv's site-packages except edgevoice's own."""
    deps = check.work / "deps"
    deps.mkdir()
    seen: set[str] = set()
    for key in ("purelib", "platlib"):
        site = Path(sysconfig.get_paths()[key])
        if str(site) in seen:
            continue
        seen.add(str(site))
        for entry in site.iterdir():
            if entry.name.startswith(EDITABLE_PREFIXES) or entry.suffix == ".pth":
                continue
            link = deps / entry.name
            if not link.exists():
                link.symlink_to(entry)
    return deps


def fresh_venv(check: Check) -> str:
    deps = dependency_site(check)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", check.venv], check=True)
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.run([check.python, "-c", purelib], capture_output=True, text=True,
                               check=True).stdout.strip())
    (site / "zz-edgevoice-check-deps.pth").write_text(f"{deps}\n")
    wheel = next(check.wheel_dir.glob("edgevoice-*.whl"))
    # this venv's pip, pointed at the fresh interpreter: --no-index, so [all]'s dependencies
    # have to be met by what the fresh venv sees, and edgevoice can only come from the wheel
    done = check.run([sys.executable, "-m", "pip", "--python", check.python, "install", "--no-index",
                      "--no-build-isolation", "--disable-pip-version-check", f"{wheel}[all]"], timeout=600)
    if "Successfully installed edgevoice" not in done.stdout:
        raise CheckFailed(f"pip did not install the wheel: {done.stdout[-800:]}")
    return f"{check.venv}: {done.stdout.strip().splitlines()[-1]}"


def import_from_venv(check: Check) -> str:
    code = ("import edgevoice, sys, sysconfig, importlib.metadata as md\n"
            "import edgevoice.device.runtime.daemon, edgevoice.audio.aec._kernel as k\n"
            "site = sysconfig.get_paths()['purelib']\n"
            "assert edgevoice.__file__.startswith(site + '/edgevoice/'), (edgevoice.__file__, site)\n"
            "assert k.__file__.startswith(site), k.__file__\n"
            "dist = md.distribution('edgevoice')\n"
            "assert str(dist.locate_file('edgevoice/__init__.py')) == edgevoice.__file__, dist\n"
            "print(edgevoice.__file__, dist.version)\n")
    where, version = check.run([check.python, "-c", code]).stdout.split()
    # by path, not by text: a temporary directory beside the checkout (/tmp/cc and
    # /tmp/ccfresh) shares its prefix without being inside it
    if Path(where).resolve().is_relative_to(REPO.resolve()):
        raise CheckFailed(f"edgevoice resolved from the checkout: {where}")
    return f"edgevoice {version} from {where}"


def smoke_version(check: Check) -> str:
    out = check.edgevoice("--version").strip()
    version = check.run([check.python, "-c", "import edgevoice; print(edgevoice.__version__)"]).stdout.strip()
    if version not in out:
        raise CheckFailed(f"--version says {out!r}, the package is {version}")
    return out


def smoke_config_check(check: Check) -> str:
    return check.edgevoice("config", "check").strip()


def smoke_doctor(check: Check) -> str:
    # exit 1 is a finding (no sound card on a CI box), not a crash; the report must be whole
    report = json.loads(check.edgevoice("doctor", "--json", ok=(0, 1)))
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    if len(statuses) < 8:
        raise CheckFailed(f"doctor ran only {statuses}")
    return ", ".join(f"{k} {v}" for k, v in statuses.items())


def smoke_devices(check: Check) -> str:
    done = check.run([check.venv / "bin" / "edgevoice", "devices"], ok=(0, 4))
    return " ".join((done.stdout or done.stderr).split())[:150]


def smoke_say(check: Check) -> str:
    wav = check.scratch / "hello.wav"
    return check_said(json.loads(check.edgevoice("say", SAY_TEXT, "--out", str(wav), "--json")))


def smoke_transcribe(check: Check) -> str:
    return check_heard(json.loads(check.edgevoice(*transcribe_args(str(check.scratch / "hello.wav")))))


def smoke_aec(check: Check) -> str:
    check.run([check.python, "-c", MAKE_AEC_PAIR, check.scratch])
    mic, ref, out = (str(check.scratch / name) for name in ("mic.wav", "ref.wav", "clean.wav"))
    result = json.loads(check.edgevoice("aec", "--mic", mic, "--ref", ref, "--out", out, "--json"))
    if not (check.scratch / "clean.wav").stat().st_size > 1000:
        raise CheckFailed("aec wrote no output")
    return aec_summary(result)


def smoke_demo(check: Check) -> str:
    out = check.edgevoice("demo", "--fast", "--out", str(check.scratch / "demo"), timeout=600)
    if "demo passed" not in out:
        raise CheckFailed(f"the demo did not play out: {out[-800:]}")
    turns = [line for line in out.splitlines()
             if line[:1].isdigit() and ("completed" in line or "interrupted" in line)]
    if len(turns) < 3:
        raise CheckFailed(f"the demo played only {len(turns)} turns")
    return f"demo passed, {len(turns)} turns"


def installed_tests(check: Check) -> str:
    suite = check.work / "suite"
    suite.mkdir()
    # the tests and what they read beside the code (the committed docs, the image's files,
    # the examples); none of the code folders, so edgevoice has nowhere to come from but the venv
    for folder in SUITE_FOLDERS:
        shutil.copytree(REPO / folder, suite / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "pyproject.toml", suite / "pyproject.toml")
    env_prefix = {"EDGEVOICE_EXPECT_PREFIX": str(check.venv)}
    os.environ.update(env_prefix)
    try:
        done = check.run([check.python, "-m", "pytest", "-m", "installed and not slow", "-q", "-p",
                          "no:cacheprovider", "-x"], cwd=suite, timeout=900, ok=(0, 1, 2, 3, 4, 5))
    finally:
        os.environ.pop("EDGEVOICE_EXPECT_PREFIX", None)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "(no output)"
    if done.returncode != 0:
        tail = "\n".join(done.stdout.strip().splitlines()[-30:])
        raise CheckFailed(f"pytest exit {done.returncode}: {tail}")
    return summary.strip("= ")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev installed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel-dir", type=Path, default=REPO / "build" / "wheel",
                        help="where the built wheel is left (default build/wheel)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="edgevoice-installed-"))
    check = Check(work=work, wheel_dir=args.wheel_dir.resolve())
    (work / "home").mkdir()
    check.scratch.mkdir()
    try:
        check.step("build the wheel", lambda: build_wheel(check))
        check.step("fresh venv, pip install wheel[all]", lambda: fresh_venv(check))
        check.step("import edgevoice from the venv", lambda: import_from_venv(check))
        check.step("edgevoice --version", lambda: smoke_version(check))
        check.step("edgevoice config check", lambda: smoke_config_check(check))
        check.step("edgevoice doctor --json", lambda: smoke_doctor(check))
        check.step("edgevoice devices", lambda: smoke_devices(check))
        check.step("edgevoice say --out", lambda: smoke_say(check))
        check.step("edgevoice transcribe", lambda: smoke_transcribe(check))
        check.step("edgevoice aec --json", lambda: smoke_aec(check))
        check.step("edgevoice demo --fast", lambda: smoke_demo(check))
        check.step("tests marked installed", lambda: installed_tests(check))
    finally:
        if args.keep:
            print(f"[installed] kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("\ninstalled-package check (the built wheel in a fresh venv, run from outside the checkout)")
    print(check.table())
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
