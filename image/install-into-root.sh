#!/usr/bin/env bash
# Install edgevoice into a root file system: the one step the image build (pi-gen, inside
# the chroot with --root /) and CI (a scratch directory on the build machine) both run.
#
#   image/install-into-root.sh --root DIR [--python PY] [--extras all,pi]
#                              [--profile NAME] [--model NAME]... [--pip-args "..."]
#                              [--deps-from SITE_PACKAGES]
#
# It creates the service user, a venv under DIR/opt/edgevoice (from PY, default python3)
# with edgevoice installed from this repository, the systemd units (enabled), the ALSA
# configs, udev rules, profile presets, a default /etc/edgevoice/config.toml, the state
# directory, and the models named with --model (fetched through the model registry,
# checksums verified). --extras "" installs edgevoice with only its core dependencies
# (numpy, soxr, aiohttp, paho-mqtt, prometheus-client, threadpoolctl). --deps-from DIR
# (CI's fast check only, never an image) makes an existing site-packages visible to the
# new venv through a .pth file, so --pip-args --no-deps installs edgevoice alone and it
# still runs.
# Ownership is set only when running as root. image/manifest.tsv lists what it makes.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
PRESETS="$REPO/device/hardware/presets"  # package data: the wheel carries the same files
ROOT="" PY="python3" EXTRAS="all,pi" PROFILE="" DEPS_FROM="" PIP_ARGS="" MODELS=()
SERVICE_USER=edgevoice

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --root) ROOT="$2"; shift 2 ;;
    --python) PY="$2"; shift 2 ;;
    --extras) EXTRAS="$2"; shift 2 ;;
    --profile) PROFILE="$2"; shift 2 ;;
    --model) MODELS+=("$2"); shift 2 ;;
    --pip-args) PIP_ARGS="$2"; shift 2 ;;
    --deps-from) DEPS_FROM="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "install-into-root: unknown argument $1" >&2; usage ;;
  esac
done
[ -n "$ROOT" ] || { echo "install-into-root: --root DIR is required" >&2; exit 2; }
mkdir -p "$ROOT"
ROOT="$(cd "$ROOT" && pwd)"
[ "$ROOT" = "/" ] && R="" || R="$ROOT"
if [ -n "$PROFILE" ] && [ ! -f "$PRESETS/profiles/$PROFILE.toml" ]; then
  echo "install-into-root: no profile $PROFILE (have: $(cd "$PRESETS/profiles" && ls | sed 's/\.toml$//' | xargs))" >&2
  exit 2
fi
AS_ROOT=0; [ "$(id -u)" -eq 0 ] && AS_ROOT=1
log() { printf '[install-into-root] %s\n' "$*" >&2; }

# --- the service user and its groups, in ROOT's own /etc (not the build host's) ----------
mkdir -p "$R/etc"
# shellcheck source=image/users.sh
. "$HERE/users.sh"
ensure_system_user "$SERVICE_USER" "edgevoice daemon" /var/lib/edgevoice
for g in audio gpio spi; do ensure_group "$g"; add_member "$g" "$SERVICE_USER"; done
owner() { [ "$AS_ROOT" -eq 1 ] && chown "$@" || true; }
UIDGID="$(awk -F: -v u="$SERVICE_USER" '$1 == u { print $3 ":" $4 }' "$R/etc/passwd")"

# --- the venv ------------------------------------------------------------------------------
VENV="$R/opt/edgevoice"
log "venv $VENV from $("$PY" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
"$PY" -m venv "$VENV"
if [ -n "$DEPS_FROM" ]; then
  site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "$DEPS_FROM" > "$site/zz-edgevoice-ci-deps.pth"
fi
TARGET="$REPO"
[ -n "$EXTRAS" ] && TARGET="$REPO[$EXTRAS]"
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $PIP_ARGS "$TARGET"
rm -rf "$REPO/build/lib" "$REPO/build/bdist."*  # pip's in-tree build leftovers

# --- files ---------------------------------------------------------------------------------
install -d -m 0755 "$R/etc/systemd/system" "$R/etc/alsa/conf.d" "$R/etc/udev/rules.d" \
  "$VENV/share/profiles" "$VENV/share/doc" "$R/etc/edgevoice" "$R/boot/firmware"
install -m 0644 "$HERE/systemd/edgevoice.service" "$HERE/systemd/edgevoice-provision.service" \
  "$R/etc/systemd/system/"
install -m 0644 "$PRESETS"/alsa/*.conf "$R/etc/alsa/conf.d/"
install -m 0644 "$HERE/udev/90-edgevoice.rules" "$R/etc/udev/rules.d/"
install -m 0644 "$PRESETS"/profiles/*.toml "$VENV/share/profiles/"
install -m 0644 "$REPO/docs/provisioning.md" "$HERE/boot/edgevoice.toml.example" "$VENV/share/doc/"
install -m 0644 "$HERE/boot/edgevoice.toml.example" "$R/boot/firmware/edgevoice.toml.example"

# Enable both units: the same symlinks `systemctl enable` makes.
install -d -m 0755 "$R/etc/systemd/system/multi-user.target.wants"
for unit in edgevoice.service edgevoice-provision.service; do
  ln -sfn "/etc/systemd/system/$unit" "$R/etc/systemd/system/multi-user.target.wants/$unit"
done

CONFIG="$R/etc/edgevoice/config.toml"
if [ ! -e "$CONFIG" ]; then
  {
    echo "# edgevoice configuration: docs at /opt/edgevoice/share/doc, every key in 'edgevoice config docs'."
    echo "# First boot merges the boot partition's edgevoice.toml over this file."
    if [ -n "$PROFILE" ]; then echo "# Hardware profile: $PROFILE"; grep -v '^#' "$PRESETS/profiles/$PROFILE.toml"; fi
  } > "$CONFIG.tmp"
  chmod 0600 "$CONFIG.tmp"
  owner "$UIDGID" "$CONFIG.tmp"
  mv "$CONFIG.tmp" "$CONFIG"
fi
install -d -m 0750 "$R/var/lib/edgevoice" "$R/var/lib/edgevoice/models"
owner -R "$UIDGID" "$R/var/lib/edgevoice"

# --- models, fetched now so the device needs no download at first boot -------------------
for model in "${MODELS[@]}"; do
  log "model $model"
  "$VENV/bin/edgevoice" models fetch "$model" --dir "$R/var/lib/edgevoice/models"
done
[ ${#MODELS[@]} -gt 0 ] && "$VENV/bin/edgevoice" models verify --dir "$R/var/lib/edgevoice/models"
owner -R "$UIDGID" "$R/var/lib/edgevoice"

"$VENV/bin/edgevoice" --version
log "done: $ROOT"
