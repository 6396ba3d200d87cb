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
touch "$R/etc/passwd" "$R/etc/group"
[ -e "$R/etc/shadow" ] || { touch "$R/etc/shadow"; chmod 0640 "$R/etc/shadow"; }
free_id() {
  local id
  for id in $(seq 999 -1 900); do
    cut -d: -f3 "$R/etc/passwd" "$R/etc/group" | grep -qx "$id" || { echo "$id"; return; }
  done
  echo "install-kiosk: no free system id" >&2; exit 1
}
ensure_group() { grep -q "^$1:" "$R/etc/group" || echo "$1:x:$(free_id):" >> "$R/etc/group"; }
add_member() {
  awk -F: -v OFS=: -v g="$1" -v u="$2" '
    $1 == g { n = split($4, m, ","); found = 0
              for (i = 1; i <= n; i++) if (m[i] == u) found = 1
              if (!found) $4 = ($4 == "" ? u : $4 "," u) }
    { print }' "$R/etc/group" > "$R/etc/group.new" && cat "$R/etc/group.new" > "$R/etc/group" && rm "$R/etc/group.new"
}
ensure_group "$KIOSK_USER"
for g in video render input; do ensure_group "$g"; add_member "$g" "$KIOSK_USER"; done
if ! grep -q "^$KIOSK_USER:" "$R/etc/passwd"; then
  gid="$(grep "^$KIOSK_USER:" "$R/etc/group" | cut -d: -f3)"
  uid="$gid"
  cut -d: -f3 "$R/etc/passwd" | grep -qx "$uid" && uid="$(free_id)"
  echo "$KIOSK_USER:x:$uid:$gid:edgevoice kiosk screen:/var/lib/edgevoice-kiosk:/usr/sbin/nologin" >> "$R/etc/passwd"
  echo "$KIOSK_USER:!*:19000::::::" >> "$R/etc/shadow"
  log "kiosk user $KIOSK_USER ($uid:$gid)"
fi

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
