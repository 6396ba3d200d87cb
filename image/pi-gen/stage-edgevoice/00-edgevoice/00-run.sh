#!/bin/bash -e
# pi-gen: copy this repository into the image root for the chroot step (host side).
REPO="$(cd "$(readlink -f "${STAGE_DIR}")/../../.." && pwd)"
rm -rf "${ROOTFS_DIR}/tmp/edgevoice-src"
mkdir -p "${ROOTFS_DIR}/tmp/edgevoice-src"
tar -C "${REPO}" --exclude=.git --exclude=.venv --exclude=build -cf - . | tar -C "${ROOTFS_DIR}/tmp/edgevoice-src" -xf -
