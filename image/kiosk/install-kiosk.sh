#!/usr/bin/env bash
# The kiosk profile: a screen showing the console's /captions at boot. Run after
# image/install-into-root.sh, on the same root:
#
#   image/kiosk/install-kiosk.sh --root DIR
#
# It creates the kiosk user (video, render, input), installs edgevoice-kiosk.service
# (enabled) and its launcher /opt/edgevoice/bin/edgevoice-kiosk, and turns the console on
# in /etc/edgevoice/config.toml (unless that file already has a [console] section).
# The image needs the packages cage and chromium (the pi-gen stage installs them when
# EDGEVOICE_KIOSK=1). image/kiosk/manifest.tsv lists what it makes.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT=""
KIOSK_USER=kiosk
while [ $# -gt 0 ]; do
  case "$1" in
    --root) ROOT="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    *) echo "install-kiosk: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$ROOT" ] || { echo "install-kiosk: --root DIR is required" >&2; exit 2; }
ROOT="$(cd "$ROOT" && pwd)"
[ "$ROOT" = "/" ] && R="" || R="$ROOT"
CONFIG="$R/etc/edgevoice/config.toml"
[ -f "$CONFIG" ] || { echo "install-kiosk: $CONFIG missing: run image/install-into-root.sh first" >&2; exit 2; }
log() { printf '[install-kiosk] %s\n' "$*" >&2; }

# --- the kiosk user, in ROOT's own /etc ------------------------------------------------
# shellcheck source=image/users.sh
. "$HERE/../users.sh"
ensure_system_user "$KIOSK_USER" "edgevoice kiosk screen" /var/lib/edgevoice-kiosk
for g in video render input; do ensure_group "$g"; add_member "$g" "$KIOSK_USER"; done

# --- the unit and its launcher -----------------------------------------------------------
install -d -m 0755 "$R/etc/systemd/system/multi-user.target.wants" "$R/opt/edgevoice/bin" \
  "$R/opt/edgevoice/share/doc"
install -m 0644 "$HERE/edgevoice-kiosk.service" "$R/etc/systemd/system/"
install -m 0755 "$HERE/edgevoice-kiosk" "$R/opt/edgevoice/bin/"
[ -f "$HERE/../../docs/console.md" ] && install -m 0644 "$HERE/../../docs/console.md" "$R/opt/edgevoice/share/doc/"
ln -sfn /etc/systemd/system/edgevoice-kiosk.service \
  "$R/etc/systemd/system/multi-user.target.wants/edgevoice-kiosk.service"

# --- the console, on ----------------------------------------------------------------------
if grep -q '^\[console\]' "$CONFIG"; then
  log "$CONFIG already has a [console] section: left as it is"
else
  { echo; cat "$HERE/console.toml"; } >> "$CONFIG"
  log "console enabled in $CONFIG"
fi
log "done: $ROOT"
