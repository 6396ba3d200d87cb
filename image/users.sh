# Users and groups in a root file system's own /etc (not the build host's), for
# install-into-root.sh and kiosk/install-kiosk.sh. Source it with R set to the root
# ("" for /). Ids come from 900-999, free in both passwd and group.

free_id() {
  local id
  for id in $(seq 999 -1 900); do
    cut -d: -f3 "$R/etc/passwd" "$R/etc/group" | grep -qx "$id" || { echo "$id"; return; }
  done
  echo "install: no free system id" >&2; exit 1
}
ensure_group() {
  grep -q "^$1:" "$R/etc/group" || echo "$1:x:$(free_id):" >> "$R/etc/group"
}
add_member() {  # add user $2 to group $1's member list
  awk -F: -v OFS=: -v g="$1" -v u="$2" '
    $1 == g { n = split($4, m, ","); found = 0
              for (i = 1; i <= n; i++) if (m[i] == u) found = 1
              if (!found) $4 = ($4 == "" ? u : $4 "," u) }
    { print }' "$R/etc/group" > "$R/etc/group.new" && cat "$R/etc/group.new" > "$R/etc/group" && rm "$R/etc/group.new"
}
ensure_system_user() {  # NAME GECOS HOME: a locked, no-login user with its own group
  local uid gid
  touch "$R/etc/passwd" "$R/etc/group"
  [ -e "$R/etc/shadow" ] || { touch "$R/etc/shadow"; chmod 0640 "$R/etc/shadow"; }
  ensure_group "$1"
  grep -q "^$1:" "$R/etc/passwd" && return 0
  gid="$(grep "^$1:" "$R/etc/group" | cut -d: -f3)"
  uid="$gid"
  cut -d: -f3 "$R/etc/passwd" | grep -qx "$uid" && uid="$(free_id)"
  echo "$1:x:$uid:$gid:$2:$3:/usr/sbin/nologin" >> "$R/etc/passwd"
  echo "$1:!*:19000::::::" >> "$R/etc/shadow"
  printf '[install] user %s (%s:%s)\n' "$1" "$uid" "$gid" >&2
}
