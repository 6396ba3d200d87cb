"""Pure renderers: the text of each system file provisioning writes (no I/O)."""

from __future__ import annotations

import re
import uuid

from edgevoice.provisioning.bootfile import WifiSettings

NM_CONNECTION_ID = "edgevoice-wifi"
NM_KEYFILE = "/etc/NetworkManager/system-connections/edgevoice-wifi.nmconnection"
_PLAIN_SSID = re.compile(r"^[A-Za-z0-9_.@+-][A-Za-z0-9 _.@+-]*[A-Za-z0-9_.@+-]$|^[A-Za-z0-9_.@+-]$")
_UUID_NAMESPACE = uuid.UUID("5b0f6d2e-6c1f-4d61-9a43-0b3a7c1c9e55")


def _keyfile_escape(value: str) -> str:
    """GKeyFile string escaping (NetworkManager keyfiles are GKeyFiles)."""
    out = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    if out.startswith(" "):
        out = "\\s" + out[1:]
    return out


def _ssid_value(ssid: str) -> str:
    # NetworkManager reads an SSID either as a string or as a ';'-separated list of byte
    # values; anything beyond plain characters is written as bytes, the way nmcli does.
    if _PLAIN_SSID.match(ssid) and not ssid.replace(";", "").isdigit():
        return ssid
    return "".join(f"{b};" for b in ssid.encode())


def nm_keyfile(wifi: WifiSettings) -> str:
    """A NetworkManager keyfile that joins ``wifi`` on boot (WPA2/WPA3-transition PSK or open)."""
    conn_uuid = uuid.uuid5(_UUID_NAMESPACE, wifi.ssid)
    lines = [
        "# Written by edgevoice provision from the boot partition's edgevoice.toml.",
        "[connection]",
        f"id={NM_CONNECTION_ID}",
        f"uuid={conn_uuid}",
        "type=wifi",
        "autoconnect=true",
        "",
        "[wifi]",
        "mode=infrastructure",
        f"ssid={_ssid_value(wifi.ssid)}",
    ]
    if wifi.hidden:
        lines.append("hidden=true")
    lines.append("")
    if wifi.passphrase:
        lines += ["[wifi-security]", "auth-alg=open", "key-mgmt=wpa-psk",
                  f"psk={_keyfile_escape(wifi.passphrase)}", ""]
    lines += ["[ipv4]", "method=auto", "", "[ipv6]", "addr-gen-mode=default", "method=auto", ""]
    return "\n".join(lines)


def regdomain_modprobe(country: str) -> str:
    """cfg80211 takes its regulatory domain from this option when the module loads."""
    return ("# Wi-Fi regulatory domain, written by edgevoice provision.\n"
            f"options cfg80211 ieee80211_regdom={country}\n")


def hosts_file(current: str, hostname: str) -> str:
    """/etc/hosts with the ``127.0.1.1`` line naming ``hostname`` (Debian's convention)."""
    lines = current.splitlines()
    wanted = f"127.0.1.1\t{hostname}"
    replaced = False
    out: list[str] = []
    for line in lines:
        if line.split("#", 1)[0].split()[:1] == ["127.0.1.1"]:
            if not replaced:
                out.append(wanted)
                replaced = True
            continue
        out.append(line)
    if not lines:
        out = ["127.0.0.1\tlocalhost", "::1\t\tlocalhost ip6-localhost ip6-loopback",
               "ff02::1\t\tip6-allnodes", "ff02::2\t\tip6-allrouters"]
    if not replaced:
        out.append(wanted)
    return "\n".join(out) + "\n"
