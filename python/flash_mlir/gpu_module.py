"""Kernels of `flash-opt --flash-gpu-pipeline="format=isa ..."` output as
launch entries the runtime can run, for programs of static shapes.

    python3 -m flash_mlir.gpu_module FILE --out DIR     # writes DIR/<kernel>.ptx, .json
    python3 -m flash_mlir.gpu_module FILE --describe    # one line per kernel

flash-compile is the way to ship kernels (manifests with symbolic grids, general
kernels, a checked ABI); this reads what the GPU pipeline alone produces, so that a
lowering flash-compile does not take yet (a score_mod) can still be run and timed on
the GPU. Each host function launches its kernel once with its own memref arguments,
in order, and constant grid, block and dynamic shared memory sizes: the entry's
parameters are the function's memref arguments (`arg0`, `arg1`, ... with their
ranks), and runtime.Launch packs their descriptors. Needs no torch or GPU.
"""

import argparse
import json
import os
import re
import sys

FUNC = re.compile(r"llvm\.func @([\w$.]+)\(([^)]*)\)")
LAUNCH = re.compile(
    r"gpu\.launch_func\s+@([\w$.]+)::@([\w$.]+)\s+blocks in \(([^)]*)\)\s+"
    r"threads in \(([^)]*)\)\s*:\s*i64(?:\s+dynamic_shared_memory_size\s+(%\w+))?"
    r"\s+args\(([^)]*)\)")
CONST = re.compile(r"(%\w+) = llvm\.mlir\.constant\((-?\d+) : \w+\) : i\d+")
BINARY = re.compile(r'gpu\.binary @([\w$.]+)\s.*?assembly = "((?:[^"\\]|\\.)*)"', re.S)


def _unescape(text):
    """An MLIR string literal's body: \\XX hex bytes, \\\\ and \\"."""
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and re.match(r"[0-9A-Fa-f]{2}", text[i + 1:i + 3]):
            out.append(int(text[i + 1:i + 3], 16))
            i += 3
        elif c == "\\" and i + 1 < len(text):
            out += text[i + 1].encode()
            i += 2
        else:
            out += c.encode()
            i += 1
    return out.decode()


def _memref_ranks(arg_types):
    """Ranks of the memref descriptors that a flattened argument list holds
    (two pointers, an offset, then sizes and strides)."""
    ranks, i = [], 0
    while i < len(arg_types):
        if arg_types[i] != "!llvm.ptr" or i + 1 >= len(arg_types) or \
                arg_types[i + 1] != "!llvm.ptr":
            raise ValueError(f"argument {i} is not a memref descriptor")
        j = i + 2
        while j < len(arg_types) and arg_types[j] == "i64":
            j += 1
        words = j - i - 2
        if words % 2 != 1:
            raise ValueError(f"argument {i}: {words} integer words is no descriptor")
        ranks.append((words - 1) // 2)
        i = j
    return ranks


def kernels_of(text):
    """Launch entries (runtime.Launch's manifest format) of every host
    function of the module, with the kernel's PTX under 'ptx_text'."""
    ptx = {m.group(1): _unescape(m.group(2)) for m in BINARY.finditer(text)}
    host = text
    for m in BINARY.finditer(text):
        host = host.replace(m.group(0), "")
    entries = []
    funcs = list(FUNC.finditer(host))
    for n, f in enumerate(funcs):
        body = host[f.end():funcs[n + 1].start() if n + 1 < len(funcs) else len(host)]
        launch = LAUNCH.search(body)
        if not launch:
            continue
        consts = {c.group(1): int(c.group(2)) for c in CONST.finditer(body)}
        args = [a.strip().split(":") for a in f.group(2).split(",") if a.strip()]
        names = [a[0].strip() for a in args]
        types = [a[1].strip() for a in args]
        launched = [a.split(":")[0].strip() for a in launch.group(6).split(",")]
        if launched != names:
            raise ValueError(f"@{f.group(1)} does not launch its kernel on its own "
                             "arguments in order")

        def sizes(group):
            out = []
            for v in group.split(","):
                v = v.strip()
                if v not in consts:
                    raise ValueError(f"@{f.group(1)}: {v} is not a constant (dynamic "
                                     "shapes are flash-compile's)")
                out.append(consts[v])
            return out

        kernel = launch.group(2)
        shared = consts[launch.group(5)] if launch.group(5) else 0
        entries.append({
            "kernel": f.group(1),
            "entry": kernel,
            "grid": [{"const": g} for g in sizes(launch.group(3))],
            "block": sizes(launch.group(4)),
            "dynamic_shared_memory_bytes": shared,
            "params": [{"name": f"arg{i}", "rank": r}
                       for i, r in enumerate(_memref_ranks(types))],
            "ptx_text": ptx.get(launch.group(1)),
        })
    return entries


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="flash-opt --flash-gpu-pipeline=format=isa output ('-': stdin)")
    p.add_argument("--out", help="write <kernel>.ptx and <kernel>.json here")
    p.add_argument("--describe", action="store_true")
    args = p.parse_args(argv)
    text = sys.stdin.read() if args.file == "-" else open(args.file).read()
    entries = kernels_of(text)
    for e in entries:
        if e["ptx_text"] is None:
            raise SystemExit(f"{e['kernel']}: no PTX (compile with format=isa)")
        if args.describe:
            ranks = [q["rank"] for q in e["params"]]
            print(f"{e['kernel']}: entry {e['entry']}, grid "
                  f"{[g['const'] for g in e['grid']]}, block {e['block']}, shared "
                  f"{e['dynamic_shared_memory_bytes']} B, memref ranks {ranks}, PTX "
                  f"{len(e['ptx_text'].splitlines())} lines")
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            name = e["kernel"]
            with open(os.path.join(args.out, name + ".ptx"), "w") as f:
                f.write(e.pop("ptx_text"))
            e["ptx"] = name + ".ptx"
            with open(os.path.join(args.out, name + ".json"), "w") as f:
                json.dump(e, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
