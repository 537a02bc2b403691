"""A test's script run in a new Python process, its standard output read as JSON (the
resume tests: one process saves a state, the next goes on from it)."""

import json
import subprocess
import sys


def run_json(script, *args, timeout: float = 180):
    """What `script` run with `args` printed, parsed as JSON; the process must succeed."""
    argv = [sys.executable, str(script), *map(str, args)]
    return json.loads(subprocess.run(argv, check=True, capture_output=True, text=True, timeout=timeout).stdout)
