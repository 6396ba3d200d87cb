#!/bin/bash -e
# pi-gen (inside the arm64 chroot): the same install step CI runs on a scratch root.
# EDGEVOICE_PROFILE and EDGEVOICE_MODELS come from pi-gen's config file.
args=(--root / --python /usr/bin/python3 --extras "all,pi")
[ -n "${EDGEVOICE_PROFILE:-}" ] && args+=(--profile "${EDGEVOICE_PROFILE}")
for model in ${EDGEVOICE_MODELS:-vosk-model-small-en-us-0.15}; do args+=(--model "$model"); done
bash /tmp/edgevoice-src/image/install-into-root.sh "${args[@]}"
# The kiosk profile (EDGEVOICE_KIOSK=1): a screen showing the console's captions at boot.
if [ "${EDGEVOICE_KIOSK:-0}" = 1 ]; then
  apt-get install -y --no-install-recommends cage chromium
  bash /tmp/edgevoice-src/image/kiosk/install-kiosk.sh --root /
fi
rm -rf /tmp/edgevoice-src
# NetworkManager manages Wi-Fi on Bookworm; provisioning writes its keyfile.
systemctl enable NetworkManager edgevoice.service edgevoice-provision.service
