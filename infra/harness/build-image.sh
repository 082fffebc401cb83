#!/bin/sh
# Build the harness image without Docker, as an OCI image archive anyone can push to ECR:
#   make harness-image   ->  build/harness-image.tar  (skopeo copy oci-archive:... docker://...)
#
# The filesystem is Debian bookworm from Debian's own packages (debootstrap), the same packages
# infra/harness/Dockerfile installs on debian:bookworm-slim, with the harness laid out as the
# Dockerfile does; umoci packs it and sets the same ENTRYPOINT, CMD and environment. Debian's
# python3 is 3.11 (the harness is standard library only, requires-python >= 3.11). ARCH is the
# platform the image is for and must be this machine's (debootstrap runs the target's binaries):
# build the arm64 image on an arm64 machine, or with Docker: docker buildx --platform linux/arm64. The root filesystem is
# cached in build/harness-rootfs: only the harness files are copied again on a rebuild.
# Needs root, debootstrap and umoci (apt-get install -y debootstrap umoci).
set -eu

OUT=${OUT:-build}
ARCH=${ARCH:-$(dpkg --print-architecture)}  # amd64 or arm64: the jobs' platform
MIRROR=${MIRROR:-http://deb.debian.org/debian}
ROOTFS=$OUT/harness-rootfs

for tool in debootstrap umoci; do
  command -v "$tool" >/dev/null || { echo "harness-image: $tool is missing (apt-get install -y debootstrap umoci)" >&2; exit 1; }
done
mkdir -p "$OUT"

# python3 runs the harness; pip and venv are for the teams' images built FROM this one (their
# Dockerfile makes a venv: Debian's python3 refuses a system-wide pip install, PEP 668).
PACKAGES=python3,python3-pip,python3-venv
STAMP=$ROOTFS/etc/toolcall300-packages
if [ ! -x "$ROOTFS/usr/bin/python3" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$PACKAGES" ]; then
  rm -rf "$ROOTFS.partial" "$ROOTFS"
  debootstrap --variant=minbase --arch="$ARCH" --include="$PACKAGES" bookworm "$ROOTFS.partial" "$MIRROR"
  rm -rf "$ROOTFS.partial/var/cache/apt/archives"/*.deb "$ROOTFS.partial/var/lib/apt/lists"/*
  echo "$PACKAGES" > "$ROOTFS.partial/etc/toolcall300-packages"
  mv "$ROOTFS.partial" "$ROOTFS"
fi

# The harness, where the Dockerfile puts it.
rm -rf "$ROOTFS/opt/toolcall300"
mkdir -p "$ROOTFS/opt/toolcall300" "$ROOTFS/usr/local/bin"
cp -a layers/toolcall300/toolcall300 "$ROOTFS/opt/toolcall300/"
find "$ROOTFS/opt/toolcall300" -name __pycache__ -prune -exec rm -rf {} +
install -m 0755 infra/harness/entrypoint.py "$ROOTFS/usr/local/bin/toolcall300-harness"
printf '#!/bin/sh\nexec python3 -m toolcall300 "$@"\n' > "$ROOTFS/usr/local/bin/toolcall300"
chmod 0755 "$ROOTFS/usr/local/bin/toolcall300"
PYTHONPATH=/opt/toolcall300 chroot "$ROOTFS" python3 -c "import toolcall300.jobs.harness, toolcall300.jobs.sandbox"

# The OCI image: one layer holding the filesystem, the Dockerfile's configuration.
OCI=$OUT/harness-oci
BUNDLE=$OUT/harness-bundle
rm -rf "$OCI" "$BUNDLE"
umoci init --layout "$OCI"
umoci new --image "$OCI:1"
umoci unpack --image "$OCI:1" "$BUNDLE"
cp -a "$ROOTFS/." "$BUNDLE/rootfs/"
# As a container image holds them: an empty /dev (the runtime mounts its own) and no setuid or
# setgid program (the adapter runs as uid 65534 and has no use for one; a local stack refuses an
# image carrying either, jobs/adapter_image.py).
find "$BUNDLE/rootfs/dev" -mindepth 1 -delete
find "$BUNDLE/rootfs" -xdev -type f -perm /6000 -exec chmod ug-s {} +
umoci repack --image "$OCI:1" "$BUNDLE"
umoci config --image "$OCI:1" --os=linux --architecture="$ARCH" \
  --config.env=PYTHONDONTWRITEBYTECODE=1 --config.env=PYTHONUNBUFFERED=1 \
  --config.env=PYTHONPATH=/opt/toolcall300 \
  --config.env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.workingdir=/tmp \
  --config.entrypoint=python3 --config.entrypoint=/usr/local/bin/toolcall300-harness \
  --config.cmd=toolcall300 --config.cmd=toolshim --config.cmd=--stream
rm -rf "$BUNDLE"
umoci gc --layout "$OCI"
tar -C "$OCI" -cf "$OUT/harness-image.tar" .
echo "harness-image: $OUT/harness-image.tar ($ARCH); push: skopeo copy oci-archive:$OUT/harness-image.tar docker://ACCOUNT.dkr.ecr.REGION.amazonaws.com/toolcall300/harness:1"
