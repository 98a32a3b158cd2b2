#!/usr/bin/env bash
# A newcomer's first `make run`, timed from a fresh clone (docs/vscode.md):
#   bench/first_run.sh SOURCE-REPO BRANCH DIR PORT
# clones BRANCH into DIR, times `make install`, then `make run` until /hub/api/ answers (on
# PORT..PORT+3), then, when code-server installs in the background, until .tools has it.
# Leaves the hub running: stop it with `kill -INT -- -$(cat DIR.run.pid)`.
set -eu
src=$1; branch=$2; dir=$3; port=$4
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }
rm -rf "$dir"; git clone -q -b "$branch" "$src" "$dir"; cd "$dir"
t0=$(now)
make install > "$dir.install.log" 2>&1
echo "make install: $(since "$t0") s"
sed -e "s/port: 8000/port: $port\n  internal_port: $((port+1))\n  proxy_api_port: $((port+2))/" \
    -e "s/port: 8010 /port: $((port+3)) /" yitong.example.yaml > "$dir.yaml"
t1=$(now)
setsid make run SETTINGS="$dir.yaml" > "$dir.run.log" 2>&1 < /dev/null &
echo $! > "$dir.run.pid"
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/hub/api/")" = 200 ]; do sleep 0.2; done
echo "make run until the hub answers: $(since "$t1") s"
echo "first make run in all: $(since "$t0") s"
if grep -q code-server-background Makefile; then
  until [ -x .tools/code-server/bin/code-server ] || [ -e .tools/code-server.failed ]; do sleep 2; done
  echo "VS Code installed in the background, after make run started: $(since "$t1") s"
fi
