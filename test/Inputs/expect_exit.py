"""Runs a command and succeeds only if it exits with the given status
(a crash is a failure, as is any other status)."""
import subprocess
import sys

want = int(sys.argv[1])
result = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if result.returncode != want:
    sys.stderr.write(result.stderr.decode(errors="replace"))
    sys.exit(f"expected exit status {want}, got {result.returncode}")
