"""Runs every function of an MLIR test file unfused and fused on the CPU and
compares the numbers.

    python3 -m flash_mlir.fusion_check FILE [--expect fused|unfused]
        [--pre "flash-opt passes before fusion"] [--dynamic-size 12]
        [--fuse=--flash-fuse-attention-backward]

The file is split at `// -----`. In each chunk the first `func.func` is the
entry: it gets random inputs (dynamic sizes become --dynamic-size) and its
results are printed as raw f32 bits. The chunk is compiled twice with
`flash-opt PRE --flash-cpu-pipeline` and `flash-opt PRE FUSE
--flash-cpu-pipeline` (FUSE is --flash-fuse-attention unless --fuse says
otherwise); both runs must agree within the tolerance of the element type,
and with --expect the fused program must (or must not) contain
flash.attention (flash.attention_backward when FUSE fuses the backward).
One line per chunk, then a summary.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys

import numpy as np

from flash_mlir.cpu_check import (TOLERANCE, bool_literal, compare, hex_bytes, parse_outputs,
                                  quantize, result_printer, run_program,
                                  tensor_type)

FUNC = re.compile(r"func\.func\s+@(\w+)\((.*?)\)\s*(?:->\s*(\(.*?\)|[^{]+?))?\s*\{",
                  re.S)
TYPE = re.compile(r"tensor<([^>]*)>")
ANY_TYPE = re.compile(r"tensor<[^>]*>|\b(?:f16|bf16|f32|f64|i1|i32|i64|index)\b")


def split_types(text):
    return [m.group(0) for m in ANY_TYPE.finditer(text or "")]


def parse_tensor(t):
    body = TYPE.match(t).group(1).split("x")
    return body[:-1], body[-1]


def make_main(name, arg_types, result_types, rng, dyn):
    lines, args = [], []
    for i, t in enumerate(arg_types):
        if not t.startswith("tensor"):
            value = "0.5" if t in ("f16", "bf16", "f32", "f64") else "1"
            lines.append(f"    %a{i}_c = arith.constant {value} : {t}")
            args.append(f"%a{i}_c")
            continue
        dims, et = parse_tensor(t)
        shape = [dyn if d == "?" else int(d) for d in dims]
        static = tensor_type(shape, et)
        if et == "i1":
            body = bool_literal(rng.random(shape) < 0.8)
        else:
            data = quantize(rng.standard_normal(shape), et)
            body = '"' + hex_bytes(data, et) + '"'
        lines.append(f"    %a{i}_c = arith.constant dense<{body}> : {static}")
        if static != t:
            lines.append(f"    %a{i} = tensor.cast %a{i}_c : {static} to {t}")
            args.append(f"%a{i}")
        else:
            args.append(f"%a{i}_c")
    names = [f"%r{i}" for i in range(len(result_types))]
    call = f"call @{name}({', '.join(args)}) : ({', '.join(arg_types)}) -> ({', '.join(result_types)})"
    lines.append(f"    {', '.join(names)} = {call}" if names else f"    {call}")
    results = []
    for i, t in enumerate(result_types):
        dims, et = parse_tensor(t)
        shape = [dyn if d == "?" else int(d) for d in dims]
        lines += result_printer(f"r{i}", shape, et, t)
        results.append((f"r{i}", shape, et, t))
    main = ["func.func private @printMemrefI32(tensor<*xi32>)", "func.func @main() {"]
    main += lines + ["    return", "}"]
    return "\n".join(main) + "\n", results


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--expect", choices=["fused", "unfused"])
    p.add_argument("--pre", default="", help="flash-opt passes applied first (e.g. TOSA lowering)")
    p.add_argument("--dynamic-size", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fuse", default="--flash-fuse-attention",
                   help="the fusion passes (write --fuse=--pass)")
    args = p.parse_args(argv)
    marker = "flash.attention_backward" if "backward" in args.fuse else "flash.attention"

    text = open(args.file).read()
    chunks = text.split("// -----")
    flash_opt = os.environ.get("FLASH_OPT", "flash-opt")
    failures = 0
    for index, chunk in enumerate(chunks):
        m = FUNC.search(chunk)
        if not m:
            continue
        name = m.group(1)
        arg_types = split_types(m.group(2))
        result_types = split_types(m.group(3))
        rng = np.random.default_rng(args.seed + index)
        main_text, results = make_main(name, arg_types, result_types, rng,
                                       args.dynamic_size)
        program = chunk + "\n" + main_text
        fused_ir = subprocess.run([flash_opt, "-"] + shlex.split(args.pre) +
                                  shlex.split(args.fuse),
                                  input=program, capture_output=True, text=True)
        if fused_ir.returncode != 0:
            print(f"FAIL @{name}: fusion failed:\n{fused_ir.stderr}")
            failures += 1
            continue
        fused = marker in fused_ir.stdout
        pre = args.pre + " " if args.pre else ""
        try:
            plain = parse_outputs(run_program(program, pre + "--flash-cpu-pipeline"), results)
            fast = parse_outputs(run_program(program, pre + args.fuse + " --flash-cpu-pipeline"),
                                 results)
        except RuntimeError as e:
            print(f"FAIL @{name}: {e}")
            failures += 1
            continue
        ok = args.expect is None or fused == (args.expect == "fused")
        msgs = []
        for rname, shape, et, _ in results:
            good, msg = compare(rname, fast[rname], plain[rname], TOLERANCE.get(et, 1e-5))
            ok &= good
            msgs.append(msg)
        state = "fused" if fused else "unfused"
        print(("PASS" if ok else "FAIL") + f" @{name} ({state}): " + "; ".join(msgs))
        failures += 0 if ok else 1
    print(f"fusion_check: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
