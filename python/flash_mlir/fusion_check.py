"""Runs every function of an MLIR file unfused and fused on the CPU and
compares the numbers.

    python3 -m flash_mlir.fusion_check FILE [--expect fused|unfused]
        [--pre "flash-opt passes before fusion"] [--dynamic-size 12]
        [--fuse=--flash-fuse-attention-backward]

FILE is any valid MLIR file (type aliases, several functions, attributes);
it is split at `// -----` like -split-input-file. Each public function that
has a body is an entry: it gets random inputs (dynamic sizes become
--dynamic-size) and its results are printed as raw f32 bits; private
functions are its callees. Signatures are read from flash-opt's own print of
the chunk, so aliases are resolved by MLIR. The chunk is compiled twice with
`flash-opt PRE --flash-cpu-pipeline` and `flash-opt PRE FUSE
--flash-cpu-pipeline` (FUSE is --flash-fuse-attention unless --fuse says
otherwise); both runs must agree within the tolerance of the element type,
and with --expect the fused chunk must (or must not) contain flash.attention
(flash.attention_backward when FUSE fuses the backward). Entries whose
arguments or results are not tensors or scalars of the supported element
types are skipped with a SKIP line. One line per entry, then a summary; the
exit status is 1 when any entry failed.
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

TYPE = re.compile(r"tensor<([^>]*)>")
SCALARS = ("f16", "bf16", "f32", "f64", "i1", "i32", "i64", "index")
TENSOR = re.compile(r"tensor<(?:(?:\d+|\?)x)*(?:f16|bf16|f32|f64|i1|i32|i64)>")
ENTRY = "fusion_check_main"
CLOSE = {"(": ")", "<": ">", "[": "]", "{": "}"}


def _group_end(text, i):
    """Index just past the bracketed group that opens at text[i]."""
    stack = []
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "-" and text.startswith("->", i):
            i += 1  # an arrow inside a nested function type
        elif c in CLOSE:
            stack.append(CLOSE[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    raise ValueError("unbalanced brackets in " + text)


def _split_top(text):
    """Splits a type list at its top-level commas."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "(<[{":
            depth += 1
        elif c in ")>]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def _function_type(text):
    """(argument types, result types) of a printed function type."""
    end = _group_end(text, 0)
    args = _split_top(text[1:end - 1])
    rest = text[end:].lstrip()
    assert rest.startswith("->"), text
    rest = rest[2:].lstrip()
    if rest.startswith("("):
        results = _split_top(rest[1:_group_end(rest, 0) - 1])
    else:
        m = re.match(r"[\w.!]+", rest)
        stop = m.end()
        if stop < len(rest) and rest[stop] == "<":
            stop = _group_end(rest, stop)
        results = [rest[:stop]]
    return args, results


def signatures(chunk, flash_opt):
    """(name, argument types, result types) of every public function with a
    body in `chunk`, from flash-opt's generic print of it (aliases expanded,
    attributes and nesting whatever the file uses)."""
    printed = subprocess.run([flash_opt, "-", "--mlir-print-op-generic"],
                             input=chunk, capture_output=True, text=True)
    if printed.returncode != 0:
        raise RuntimeError(f"flash-opt cannot parse the input:\n{printed.stderr}")
    text = printed.stdout
    found = []
    for m in re.finditer(r'"func\.func"\(\) <\{', text):
        props_start = m.end() - 1
        props = text[props_start:_group_end(text, props_start)]
        if re.search(r'sym_visibility = "(private|nested)"', props):
            continue
        after = text[props_start + len(props):].lstrip()
        if after.startswith("({") and after[2:].lstrip().startswith("})"):
            continue  # a declaration
        name = re.search(r'sym_name = "((?:[^"\\]|\\.)*)"', props).group(1)
        t = props.index("function_type = ") + len("function_type = ")
        args, results = _function_type(props[t:])
        found.append((name, args, results))
    return found


def supported(t):
    return t in SCALARS or TENSOR.fullmatch(t) is not None


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
    main = [f"func.func @{ENTRY}() {{"]
    main += lines + ["    return", "}"]
    return "\n".join(main) + "\n", results


def check_chunks(path, plain_passes, test_passes, dynamic_size=12, seed=0,
                 marker=None, marker_passes="", expect=None):
    """Runs every entry of every chunk of `path` compiled with the flash-opt
    flags `plain_passes` and with `test_passes` (each ending in a CPU
    pipeline) and compares the numbers. With `marker`, the chunk through
    `marker_passes` is searched for it: the line says fused or unfused, and
    with `expect` (True: must contain it) a mismatch fails. Prints one line
    per entry; returns the number of failures."""
    text = open(path).read()
    flash_opt = os.environ.get("FLASH_OPT", "flash-opt")
    failures = 0
    for index, chunk in enumerate(text.split("// -----")):
        try:
            entries = signatures(chunk, flash_opt)
        except RuntimeError as e:
            print(f"FAIL chunk {index + 1}: {e}")
            failures += 1
            continue
        if not entries:
            continue
        marked = None
        if marker:
            transformed = subprocess.run([flash_opt, "-"] + shlex.split(marker_passes),
                                         input=chunk, capture_output=True, text=True)
            if transformed.returncode != 0:
                print(f"FAIL chunk {index + 1}: flash-opt {marker_passes} failed:\n"
                      f"{transformed.stderr}")
                failures += 1
                continue
            marked = marker in transformed.stdout
        printer = "" if re.search(r"@printMemrefI32\b", chunk) else \
            "func.func private @printMemrefI32(tensor<*xi32>)\n"
        for name, arg_types, result_types in entries:
            bad = [t for t in arg_types + result_types if not supported(t)]
            if bad:
                print(f"SKIP @{name}: unsupported type {bad[0]}")
                continue
            rng = np.random.default_rng(seed + index)
            main_text, results = make_main(name, arg_types, result_types, rng, dynamic_size)
            program = chunk + "\n" + printer + main_text
            try:
                plain = parse_outputs(run_program(program, plain_passes, entry=ENTRY), results)
                fast = parse_outputs(run_program(program, test_passes, entry=ENTRY), results)
            except RuntimeError as e:
                print(f"FAIL @{name}: {e}")
                failures += 1
                continue
            ok = expect is None or marked == expect
            msgs = []
            for rname, shape, et, _ in results:
                good, msg = compare(rname, fast[rname], plain[rname], TOLERANCE.get(et, 1e-5))
                ok &= good
                msgs.append(msg)
            state = "" if marked is None else (" (fused)" if marked else " (unfused)")
            print(("PASS" if ok else "FAIL") + f" @{name}{state}: " + "; ".join(msgs))
            failures += 0 if ok else 1
    return failures


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
    pre = args.pre + " " if args.pre else ""
    expect = None if args.expect is None else args.expect == "fused"
    failures = check_chunks(args.file, pre + "--flash-cpu-pipeline",
                            pre + args.fuse + " --flash-cpu-pipeline", args.dynamic_size,
                            args.seed, marker=marker, marker_passes=pre + args.fuse,
                            expect=expect)
    print(f"fusion_check: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
