"""``python -P replica_wait.py STATUS MLSERVER ARGV...``: a replica submitted while MLServer's
environment is being built (models/mlserver_env.py). Waits until ``MLSERVER`` is there, then
execs ``ARGV`` (the replica's own command, mlserver.command); exits 1 with the build's reason
when ``STATUS`` (the build's status file, JSON) says it failed. Standard library only: it runs
on the platform's interpreter as the replica's account, before MLServer exists."""

from __future__ import annotations

import json
import os
import sys
import time


def main(argv: list[str]) -> int:
    status, mlserver, command = argv[0], argv[1], argv[2:]
    said = ""
    while not (os.access(mlserver, os.X_OK) and os.access(command[0], os.X_OK)):
        try:
            with open(status) as f:
                s = json.load(f)
        except (OSError, ValueError):
            s = {}
        if s.get("state") == "failed":
            print(f"the model server environment could not be built: {s.get('reason', '')}", file=sys.stderr)
            return 1
        line = f"waiting for the model server environment to be built ({s.get('log', 'no log yet')})"
        if line != said:
            print(line, flush=True)
            said = line
        time.sleep(1)
    print("the model server environment is there: starting MLServer", flush=True)
    os.execv(command[0], command)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
