"""The image's static parts: units (systemd-analyze), ALSA configs (alsa-lib), profile presets."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from edgevoice.device.cli import main
from edgevoice.device.hardware.profiles import PROFILES, Hardware, read_hardware, suggest

REPO = Path(__file__).resolve().parents[2]
IMAGE = REPO / "image"
PRESETS = REPO / "device" / "hardware" / "presets"
UNITS = ("edgevoice.service", "edgevoice-provision.service")
# Exposure thresholds (0 = locked down, 10 = none). The daemon must reach ALSA, GPIO and
# the network; provisioning writes /etc as root and sets the hostname and Wi-Fi domain.
EXPOSURE = {"edgevoice.service": 2.0, "edgevoice-provision.service": 3.5}

needs_systemd = pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze")


def staged_units(tmp_path: Path) -> Path:
    """The units with /opt/edgevoice re-rooted onto an executable in tmp_path (verify checks it)."""
    exe = tmp_path / "opt/edgevoice/bin/edgevoice"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    out = tmp_path / "units"
    out.mkdir()
    for unit in UNITS:
        text = (IMAGE / "systemd" / unit).read_text().replace("ExecStart=/opt/", f"ExecStart={tmp_path}/opt/")
        (out / unit).write_text(text)
    return out


@needs_systemd
def test_units_verify_without_any_warning(tmp_path: Path) -> None:
    units = staged_units(tmp_path)
    result = subprocess.run(["systemd-analyze", "verify", *(str(units / u) for u in UNITS)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stderr == "", result.stderr


@needs_systemd
@pytest.mark.parametrize("unit", UNITS)
def test_unit_hardening_meets_threshold(tmp_path: Path, unit: str) -> None:
    root = tmp_path / "root"
    (root / "etc/systemd/system").mkdir(parents=True)
    shutil.copy(IMAGE / "systemd" / unit, root / "etc/systemd/system" / unit)
    result = subprocess.run(["systemd-analyze", "security", "--offline=yes", f"--root={root}", unit],
                            capture_output=True, text=True, check=False)
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert match, result.stdout + result.stderr
    assert float(match[1]) <= EXPOSURE[unit]


def test_daemon_unit_has_what_the_issue_asks() -> None:
    text = (IMAGE / "systemd/edgevoice.service").read_text()
    for line in ("Type=notify", "Restart=on-failure", "User=edgevoice", "ProtectSystem=strict",
                 "ReadWritePaths=/var/lib/edgevoice", "PrivateTmp=yes", "NoNewPrivileges=yes",
                 "SupplementaryGroups=audio gpio spi", "DeviceAllow=char-alsa rw",
                 "DeviceAllow=char-gpiochip rw"):
        assert f"\n{line}\n" in text, line
    assert re.search(r"\nWatchdogSec=\d+", text)
    prov = (IMAGE / "systemd/edgevoice-provision.service").read_text()
    for line in ("Type=oneshot", "ConditionPathExists=/boot/firmware/edgevoice.toml",
                 "Wants=network-pre.target"):
        assert f"\n{line}\n" in prov, line
    assert re.search(r"\nBefore=network-pre.target NetworkManager.service.* edgevoice.service\n", prov)


@pytest.mark.parametrize("conf", sorted(p.name for p in (PRESETS / "alsa").glob("*.conf")))
def test_alsa_config_parses_and_defines_its_pcms(conf: str, tmp_path: Path) -> None:
    path = PRESETS / "alsa" / conf
    names = re.findall(r"^pcm\.(\w+)", path.read_text(), re.M)
    assert names
    env = {**os.environ, "ALSA_CONFIG_PATH": f"/usr/share/alsa/alsa.conf:{path}", "HOME": str(tmp_path)}
    result = subprocess.run(["aplay", "-L"], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0 and "ALSA lib" not in result.stderr, result.stderr
    listed = set(result.stdout.split())
    assert set(names) <= listed


@pytest.mark.parametrize("preset", sorted(p.name for p in (PRESETS / "profiles").glob("*.toml")))
def test_profile_presets_pass_config_check(preset: str) -> None:
    assert main(["config", "check", "--config", str(PRESETS / "profiles" / preset)]) == 0


def test_every_profile_has_a_preset_and_its_pcms_exist() -> None:
    defined = set()
    for conf in (PRESETS / "alsa").glob("*.conf"):
        defined |= set(re.findall(r"^pcm\.(\w+)", conf.read_text(), re.M))
    for name in PROFILES:
        text = (PRESETS / "profiles" / f"{name}.toml").read_text()
        for device in re.findall(r'^(?:capture|playback)_device = "(\w+)"', text, re.M):
            assert device in defined, (name, device)


def write_tree(root: Path, cards: str, card_files: dict[int, dict[str, str]],
               usb: dict[str, tuple[str, str]] | None = None) -> Path:
    (root / "proc/asound").mkdir(parents=True)
    (root / "proc/asound/cards").write_text(cards)
    for index, files in card_files.items():
        for name, body in files.items():
            path = root / f"proc/asound/card{index}/{name}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
    for dev, (vendor, product) in (usb or {}).items():
        d = root / "sys/bus/usb/devices" / dev
        d.mkdir(parents=True)
        (d / "idVendor").write_text(vendor + "\n")
        (d / "idProduct").write_text(product + "\n")
    return root


PI_HEADPHONES = (" 0 [Headphones     ]: bcm2835_headpho - bcm2835 Headphones\n"
                 "                      bcm2835 Headphones\n")
PI_HDMI = (" 2 [vc4hdmi0       ]: vc4-hdmi - vc4-hdmi-0\n"
           "                      vc4-hdmi-0\n")


def names(hardware: Hardware) -> list[str]:
    return [s.profile.name for s in suggest(hardware)]


def test_respeaker_usb_array_is_recognised(tmp_path: Path) -> None:
    cards = PI_HEADPHONES + (" 1 [ArrayUAC10     ]: USB-Audio - ReSpeaker 4 Mic Array (UAC1.0)\n"
                             "                      SEEED ReSpeaker 4 Mic Array (UAC1.0)\n")
    files = {0: {"pcm0p": ""}, 1: {"usbid": "2886:0018\n", "pcm0c": "", "pcm0p": ""}}
    root = write_tree(tmp_path, cards, files, {"1-1": ("2886", "0018")})
    assert names(read_hardware(root))[0] == "respeaker-usb-v2"


def test_hats_are_recognised(tmp_path: Path) -> None:
    line = " 1 [seeed2micvoicec]: seeed-2mic-voic - seeed2micvoicecard\n"
    two = write_tree(tmp_path / "a", PI_HEADPHONES + line, {1: {"pcm0c": "", "pcm0p": ""}})
    assert names(read_hardware(two)) == ["respeaker-2mic"]
    line = " 1 [seeed4micvoicec]: seeed-4mic-voic - seeed4micvoicecard\n"
    four = write_tree(tmp_path / "b", PI_HEADPHONES + line, {1: {"pcm0c": ""}})
    hits = suggest(read_hardware(four))
    assert [s.profile.name for s in hits] == ["respeaker-4mic"] and hits[0].overrides == {}


def test_generic_usb_mic_gets_its_exact_device(tmp_path: Path) -> None:
    cards = PI_HEADPHONES + " 1 [Device         ]: USB-Audio - USB PnP Sound Device\n" + PI_HDMI
    root = write_tree(tmp_path, cards, {1: {"usbid": "0d8c:0014\n", "pcm0c": "", "pcm0p": ""}})
    hits = suggest(read_hardware(root))
    assert [s.profile.name for s in hits] == ["usb-mic-headphones", "usb-mic-hdmi"]
    assert hits[0].overrides == {"audio": {"capture_device": "plughw:CARD=Device,DEV=0"}}


def test_speakerphone_is_recognised(tmp_path: Path) -> None:
    cards = PI_HEADPHONES + " 1 [USB            ]: USB-Audio - Jabra SPEAK 410 USB\n"
    root = write_tree(tmp_path, cards, {1: {"usbid": "0b0e:0412\n", "pcm0c": "", "pcm0p": ""}})
    hits = suggest(read_hardware(root))
    assert hits[0].profile.name == "usb-speakerphone"
    assert hits[0].overrides["audio"]["playback_device"] == "plughw:CARD=USB,DEV=0"


def test_nothing_connected_suggests_nothing(tmp_path: Path) -> None:
    assert suggest(read_hardware(write_tree(tmp_path, PI_HEADPHONES, {0: {"pcm0p": ""}}))) == []


def test_array_profiles_name_a_geometry_that_fits_their_mic_channels() -> None:
    from edgevoice.audio.array.geometry import parse_geometry
    from edgevoice.device.config import load_config

    for profile in PROFILES.values():
        config = load_config(PRESETS / "profiles" / f"{profile.name}.toml").config
        if profile.geometry:
            assert parse_geometry(profile.geometry).mic_count == len(config.audio.mic_channels), profile
        if config.array.geometry:  # a preset that turns the array on uses the profile's own geometry
            assert config.array.geometry == profile.geometry, profile
    four = load_config(PRESETS / "profiles" / "respeaker-4mic.toml").config
    assert four.array.geometry == "respeaker-4mic"  # the 4-mic HAT is heard as an array by default


def test_suggest_names_the_array_geometry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = " 1 [seeed4micvoicec]: seeed-4mic-voic - seeed4micvoicecard\n"
    four = write_tree(tmp_path / "four", PI_HEADPHONES + line, {1: {"pcm0c": ""}})
    assert main(["devices", "--suggest", "--root", str(four), "--json"]) == 0
    hit = json.loads(capsys.readouterr().out)["suggestions"][0]
    assert (hit["profile"], hit["geometry"], hit["array_in_preset"]) == (
        "respeaker-4mic", "respeaker-4mic", True)
    line = " 1 [seeed2micvoicec]: seeed-2mic-voic - seeed2micvoicecard\n"
    two = write_tree(tmp_path / "two", PI_HEADPHONES + line, {1: {"pcm0c": "", "pcm0p": ""}})
    assert main(["devices", "--suggest", "--root", str(two)]) == 0
    text = capsys.readouterr().out
    assert ('array geometry: respeaker-2mic (off in the preset; to steer a beam, set [array] '
            'geometry = "respeaker-2mic")') in text
    usb_card = " 1 [Device         ]: USB-Audio - USB PnP Sound Device\n"
    usb = write_tree(tmp_path / "usb", PI_HEADPHONES + usb_card,
                     {1: {"usbid": "0d8c:0014\n", "pcm0c": "", "pcm0p": ""}})
    assert main(["devices", "--suggest", "--root", str(usb), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["suggestions"][0]["geometry"] is None  # one mic: no array
