"""Checks flash-compile manifests without a GPU: every kernel was assembled
by ptxas (a cubin exists), uses no spill memory, declares a launch it can
make (shared memory within the chip's limit), and the general kernel it
names for unaligned rows and its persistent form exist.

    python3 -m flash_mlir.manifest_check DIR [DIR...]
"""

import json
import os
import sys

SHARED_LIMIT = {"sm_80": 163 * 1024, "sm_90a": 227 * 1024}


def main(argv=None):
    dirs = (argv if argv is not None else sys.argv[1:])
    count, problems = 0, []
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if not name.endswith(".json"):
                continue
            with open(os.path.join(d, name)) as f:
                m = json.load(f)
            # A backward kernel is several launches, each its own image.
            for i, launch in enumerate(m.get("launches") or [m]):
                count += 1
                where = f"{d}/{m['kernel']}" + (f" launch {i}" if "launches" in m else "")
                if not launch.get("cubin") or \
                        not os.path.exists(os.path.join(d, launch["cubin"])):
                    problems.append(f"{where}: not assembled by ptxas")
                if launch.get("spill_bytes") != 0:
                    problems.append(f"{where}: {launch.get('spill_bytes')} spill bytes")
                if m.get("general") and not os.path.exists(os.path.join(d, m["general"])):
                    problems.append(f"{where}: general kernel {m['general']} missing")
                form = m.get("persistent_form")
                if form and not os.path.exists(os.path.join(d, form["kernel"])):
                    problems.append(f"{where}: persistent form {form['kernel']} missing")
                if launch["dynamic_shared_memory_bytes"] > SHARED_LIMIT[m["chip"]]:
                    problems.append(f"{where}: {launch['dynamic_shared_memory_bytes']} B "
                                    f"of shared memory exceeds {m['chip']}'s limit")
                print(f"{where}: registers {launch['registers']}, spill "
                      f"{launch['spill_bytes']} B, shared "
                      f"{launch['dynamic_shared_memory_bytes']} B")
    for p in problems:
        print("ERROR " + p)
    print(f"{count} kernels assembled, {len(problems)} spill" if not problems
          else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
