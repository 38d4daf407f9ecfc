"""Mutation fuzzer and differential tester of flash-opt.

    python3 -m flash_mlir.fuzz --seed 1 --budget-seconds 60 --max-runs 400 --out DIR
    python3 -m flash_mlir.fuzz --seed 7 --budget-seconds 900 --jobs 2 --out /tmp/fuzz   # long run

Two parts, both deterministic for a given --seed (the work is a fixed
sequence; the budgets only cut it short):

The mutation fuzzer takes every .mlir file under test/ and examples/, split
at `// -----` like -split-input-file, keeps the chunks that flash-opt parses
and mutates them at the text level: tensor shapes (0, 1, ?, 2^31, 2^62, ...),
element types, the flash ops' attributes (scale incl. huge, inf and NaN;
window incl. near INT64_MAX; causal on and off), operands (swapped, dropped,
duplicated; bias/mask clauses dropped or added), linalg bodies (arith ops,
comparison predicates, constants, iterator types and indexing maps). Every
mutant is parsed; every valid one runs through a sample of the flash passes
and pipelines (fusion, backward fusion, decomposition, tiling for every
target, the CPU and GPU pipelines for every chip, chains of them) with
mutated pass options (block sizes, threads, targets and chips, tensor cores,
invalid values too), each run under a timeout and an address-space limit.
A run is classified as

    ok        exit 0 and the output parses again (flash-opt, verifier on)
    error     exit 1 with a located diagnostic (`file:line:col: error:`) or a
              pass-option diagnostic: a clean rejection
    CRASH     a signal, another exit status, "PLEASE submit a bug report",
              "Stack dump", "LLVM ERROR" or an assertion
    HANG      the timeout expired
    INVALID   exit 0 but the output does not parse or verify, or exit 1 where
              the first error is the verifier of an op that the input does not
              contain (a pass built invalid IR)
    UNLOCATED exit 1 with no located diagnostic
    OOM       the address-space limit was hit
    upstream  a crash of a known upstream MLIR 22 bug (docs/Fuzzing.md), not ours

The differential tester builds random small flash.attention programs
(B, Hq/Hkv with GQA, M, N ragged and 1, D and Dv multiples of 4, causal,
window, bias and mask of several broadcast shapes, f32/f16/bf16, dynamic
dims, forward and backward) with cpu_check's program builder, runs them on
the CPU (--flash-cpu-pipeline, tiled for a random target and block size, and
naive) through cpu_check's runner and compares with reference.py in float64;
and, through fusion_check's machinery, runs the decomposed linalg form of
forward programs and shape-mutated fusion lit tests unfused and fused and
compares the numbers.

Every finding's input is written to --out (one file per distinct finding,
with the command and the diagnostic in a comment header). The last line is
the summary; the exit status is 1 when there is any finding (CRASH, HANG,
INVALID, UNLOCATED, OOM, a differential mismatch or a compiler failure on a
valid random program). --skip excludes mutation/option labels (fnmatch
patterns) of known open findings, listed in docs/Fuzzing.md.
"""

import argparse
import concurrent.futures
import contextlib
import fnmatch
import glob
import io
import os
import random
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLASH_OPT = os.environ.get("FLASH_OPT") or os.path.join(REPO, "build", "bin", "flash-opt")
if not os.path.exists(FLASH_OPT):
    FLASH_OPT = "flash-opt"

FINDINGS = ("CRASH", "HANG", "INVALID", "UNLOCATED", "OOM")
INT64_MAX = 2**63 - 1

# ----------------------------------------------------------------------------
# Running a tool under limits
# ----------------------------------------------------------------------------

LIMITS = SimpleNamespace(timeout=20.0, mem_bytes=4 << 30)


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (LIMITS.mem_bytes, LIMITS.mem_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_limited(argv, input_text, timeout=None):
    """(returncode or None on timeout, stdout, stderr, seconds). The worker
    processes that call this are single-threaded, so preexec_fn is safe."""
    start = time.monotonic()
    for attempt in range(60):
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, preexec_fn=_limit_memory)
            break
        except OSError:
            # The tool is being relinked (a build in the same tree): wait for it.
            if attempt == 59:
                raise
            time.sleep(2)
    start = time.monotonic()
    try:
        out, err = proc.communicate(input_text.encode(), timeout=timeout or LIMITS.timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        rc = None
    return (rc, out.decode(errors="replace"), err.decode(errors="replace"),
            time.monotonic() - start)


class _LimitedSubprocess:
    """Stands in for the subprocess module inside cpu_check and fusion_check
    (their runners, reused as they are) so that every tool they start runs
    under the same timeout and memory limit."""

    def __getattr__(self, name):
        return getattr(subprocess, name)

    @staticmethod
    def run(*args, **kwargs):
        kwargs.setdefault("timeout", LIMITS.timeout * 3)
        kwargs.setdefault("preexec_fn", _limit_memory)
        return subprocess.run(*args, **kwargs)


# ----------------------------------------------------------------------------
# Classification
# ----------------------------------------------------------------------------

LOCATED = re.compile(r"^\S*:\d+:\d+: error:", re.M)
OPTION_ERROR = re.compile(r"for the --?[\w-]+ option|Cannot find option|no such option|"
                          r"unknown command line argument|failed to add|"
                          r"Pass-Options|pass pipeline|may only occur zero or one times|"
                          r"Invalid argument for|invalid option value|must be positive|"
                          r"^[\w-]+: --[\w-]+", re.M)
CRASH_TEXT = re.compile(r"PLEASE submit a bug report|Stack dump|LLVM ERROR|Assertion .* failed|"
                        r"UNREACHABLE executed|terminate called")
OOM_TEXT = re.compile(r"out of memory|bad_alloc|Allocation failed|Cannot allocate memory")
VERIFIER_ERROR = re.compile(r"error: '([a-z_]+\.[a-z_.]+)' op ")
NEGATIVE_INDEX = re.compile(r"%([\w.$-]+) = arith\.constant -\d+ : index")


SHAPE = re.compile(r"(?:tensor|memref)<((?:\d+x)+)")


def _has_overflowing_shape(text):
    """Whether a static shape of the text has 2^63 elements or more."""
    for m in SHAPE.finditer(text):
        count = 1
        for d in m.group(1).rstrip("x").split("x"):
            count *= int(d)
        if count >= 2 ** 63:
            return True
    return False


def upstream_label(text, passes, err):
    """Known upstream MLIR 22 bugs (docs/Fuzzing.md), reported apart."""
    for m in NEGATIVE_INDEX.finditer(text):
        if re.search(rf"(tensor|memref)\.dim %[\w.$-]+, %{re.escape(m.group(1))}\b", text):
            return "upstream:dim-negative-index"
    if "'memref.expand_shape' op invalid output shape" in err and "tensor.expand_shape" in text:
        # tensor.expand_shape's verifier takes static output_shape entries
        # that contradict the result type; bufferized, memref's rejects them.
        return "upstream:expand-shape-output-shape"
    if "gpu-module-to-binary" in passes and re.search(r"format=(?!isa|bin|fatbin|llvm|offload)", passes):
        return "upstream:gpu-module-to-binary-format"
    if "memref::ReinterpretCastOp::build" in err and "tensor.expand_shape" in text:
        # The same verifier gap: a static output_shape entry for a dynamic
        # result dim crashes --expand-strided-metadata (mlir-opt alone too).
        return "upstream:expand-shape-output-shape"
    if "to match the number of dynamic entries in 'static_strides'" in err and \
            _has_overflowing_shape(text):
        # expand-strided-metadata multiplies static strides past int64 (into
        # the dynamic sentinel) for tensors of 2^63 elements or more.
        return "upstream:stride-overflow"
    if "'func.constant' op reference to function with mismatched type" in err and \
            "pipeline" in passes:
        # one-shot-bufferize with function boundaries (in the CPU and GPU
        # pipelines) rewrites a function's type, not its func.constant users.
        return "upstream:bufferize-func-constant"
    return None


def foreign(op, text):
    """Whether op (dialect.name) is absent from the input, in generic or
    custom spelling; flash ops are the input's own."""
    return not op.startswith("flash.") and op not in text and \
        not re.search(rf"\b{re.escape(op.split('.', 1)[1])}\b", text)


def pass_name(passes):
    """The last pass of a pass string (flash-compile for its runs)."""
    if passes.startswith("@"):
        return "flash-compile"
    names = [t.split("=", 1)[0] for t in shlex.split(passes) if t.startswith("-")]
    return names[-1].lstrip("-") if names else "parse"


def classify(text, passes, rc, err, out_ok):
    """The class of one run (see the module docstring)."""
    if rc is None:
        return "HANG"
    if OOM_TEXT.search(err):
        return "OOM"
    if rc < 0 or rc not in (0, 1) or CRASH_TEXT.search(err):
        return upstream_label(text, passes, err) or "CRASH"
    if rc == 0:
        return "ok" if out_ok else "INVALID"
    first = re.search(r"error: (.*)", err)
    note = re.search(r"note: see current operation: (?:%[\w.$:#-]+(?:, %[\w.$:#-]+)* = )?\"?([a-z_]+\.[a-z_.]+)", err)
    if passes and first and note and not first.group(1).startswith(("flash-", "'flash.")) \
            and foreign(note.group(1), text):
        # A verifier message about an op the input does not have: a pass
        # built invalid IR (a pass's own diagnostics start with its name).
        if "error:" not in err[:first.start()]:
            return upstream_label(text, passes, err) or "INVALID"
    up = upstream_label(text, passes, err)
    if up and up.startswith("upstream:expand"):
        return up
    m = VERIFIER_ERROR.search(err)
    if passes and m and not m.group(1).startswith("flash.") and "error:" not in err[:m.start()]:
        # The input verified; after a pass an op's verifier fails: the pass
        # built invalid IR (a flash op's errors are the passes' diagnostics).
        return up or "INVALID"
    if LOCATED.search(err) or OPTION_ERROR.search(err):
        return "error"
    return "UNLOCATED"


def signature(cls, passes, err, rc):
    """What makes two findings the same: the class, the pass and the first
    diagnostic (line/column numbers and SSA names stripped) or the signal."""
    base = pass_name(passes)
    lines = [l for l in err.splitlines() if "error:" in l or "LLVM ERROR" in l
             or "Assertion" in l]
    frames = re.findall(r"#\d+ 0x[0-9a-f]+ ((?:mlir::flash::|\(anonymous namespace\)::)[\w:]+)", err)
    if cls in ("CRASH", "OOM") and frames:
        return f"{cls} {frames[0]}"
    if cls in ("HANG", "OOM"):
        # The pass and its out-of-range options (huge or negative sizes).
        edges = sorted(set(re.findall(r"([\w-]+=(?:-\d+|\d{5,}))", passes)))
        return f"{cls} {base} {' '.join(edges)}".strip()
    head = lines[0].split("error:", 1)[-1] if lines else f"rc={rc}"
    head = re.sub(r"\d+", "N", re.sub(r"%[\w.$-]+", "%x", head))
    return f"{cls} {base} {head.strip()[:160]}"


# ----------------------------------------------------------------------------
# Seeds
# ----------------------------------------------------------------------------

def seed_files(root):
    files = sorted(glob.glob(os.path.join(root, "test", "**", "*.mlir"), recursive=True) +
                   glob.glob(os.path.join(root, "examples", "**", "*.mlir"), recursive=True))
    return [f for f in files if "/Fuzz/" not in f]


def load_seeds(root):
    """[(name, chunk)] of every chunk that flash-opt parses; comments (RUN and
    CHECK lines) removed."""
    seeds = []
    for path in seed_files(root):
        rel = os.path.relpath(path, root)
        for i, chunk in enumerate(open(path).read().split("// -----")):
            body = "\n".join(l for l in chunk.splitlines() if not l.lstrip().startswith("//"))
            if "func.func" not in body and "flash." not in body:
                continue
            rc, _, _, _ = run_limited([FLASH_OPT, "-"], body)
            if rc == 0:
                seeds.append((f"{rel}#{i}", body.strip() + "\n"))
    return seeds


def synthetic_seeds(count=24, seed=0):
    """Random flash.attention functions in destination-passing style (O
    written into a writable argument), the form --flash-gpu-pipeline takes;
    the lit tests have few of them."""
    rng = random.Random(f"synthetic:{seed}")
    seeds = []
    for i in range(count):
        b, hkv = rng.choice([1, 2]), rng.choice([1, 2])
        hq = hkv * rng.choice([1, 2])
        m, n = rng.choice([1, 16, 33, 64, 100, 128]), rng.choice([1, 16, 33, 64, 128, 300])
        d = rng.choice([16, 32, 64, 128])
        et = rng.choice(["f16", "bf16", "f32"])
        dyn = [rng.random() < 0.3 for _ in range(4)]

        def ty(dims):
            return "tensor<" + "x".join("?" if k < 3 and dyn[k] else str(x)
                                        for k, x in enumerate(dims)) + f"x{et}>"
        tq, tk, to = ty([b, hq, m, d]), ty([b, hkv, n, d]), ty([b, hq, m, d])
        attrs = []
        if rng.random() < 0.4:
            attrs.append("causal")
        if rng.random() < 0.2:
            attrs.append(f"window = {rng.choice([0, 8, 64])} : i64")
        if rng.random() < 0.3:
            attrs.append(f"scale = {rng.choice(['0.125', '1.0', '0.5'])} : f32")
        attr = (" {" + ", ".join(attrs) + "}") if attrs else ""
        seeds.append((f"synthetic#{i}", (
            f"func.func @gpu_{i}(%q: {tq}, %k: {tk}, %v: {tk}, %o_out: {to} "
            f"{{bufferization.writable = true}}) -> {to} {{\n"
            f"  %o = flash.attention %q, %k, %v{attr} : {tq}, {tk}, {tk} -> {to}\n"
            f"  %r = bufferization.materialize_in_destination %o in %o_out : ({to}, {to}) -> {to}\n"
            f"  return %r : {to}\n}}\n")))
    return seeds


# ----------------------------------------------------------------------------
# Mutations: each takes (text, rng) and returns (text, label) or None
# ----------------------------------------------------------------------------

TENSOR = re.compile(r"tensor<((?:(?:\d+|\?)x)+)([a-z]\w*)>")
EDGE_DIMS = ["0", "1", "2", "3", "5", "7", "13", "17", "31", "33", "64", "100", "128",
             "1000", "?", "?", str(2**31), str(2**31 - 1), str(2**62), str(2**32 + 4)]
ETYPES = ["f16", "bf16", "f32", "f64", "i1", "i8", "i32", "f8E4M3FN"]
SCALES = ["0.0", "-0.125", "1.0", "1.0e+10", "1.0e+30", "3.4e+38", "0x7F800000", "0xFF800000",
          "0x7FC00000", "1.0e-30", "1.0e-45", "-0.0"]
WINDOWS = [0, 1, 2, 3, 7, 64, -1, -(2**63), 2**31, 2**62, INT64_MAX, INT64_MAX - 1, INT64_MAX - 7]
ARITH = ["arith.addf", "arith.mulf", "arith.subf", "arith.maximumf", "arith.minimumf",
         "arith.divf", "arith.maxnumf"]
UNARY = ["math.exp", "math.exp2", "math.log", "math.sqrt", "math.rsqrt", "math.tanh"]
CMPF = ["ogt", "oge", "olt", "ole", "oeq", "une", "ult", "ugt"]
CMPI = ["sgt", "sge", "slt", "sle", "eq", "ne", "ugt", "ult"]
FLOAT_CONSTS = ["0.0", "-0.0", "1.0", "0xFF800000", "0x7F800000", "0x7FC00000", "1.0e+30",
                "-3.40282347E+38", "1.0e-45"]
INT_CONSTS = ["0", "1", "-1", "2", "7", str(2**31), str(2**62), str(-(2**63))]
FLASH_OP = re.compile(r"= flash\.(attention|attention_backward) ")


def _pick(rng, matches):
    matches = list(matches)
    return rng.choice(matches) if matches else None


def _sub(text, m, group, new):
    return text[:m.start(group)] + new + text[m.end(group):]


def mut_shape_one(text, rng):
    m = _pick(rng, TENSOR.finditer(text))
    if not m:
        return None
    dims = m.group(1).split("x")[:-1]
    i = rng.randrange(len(dims))
    old, dims[i] = dims[i], rng.choice(EDGE_DIMS)
    return _sub(text, m, 1, "x".join(dims) + "x"), f"shape-one:{old}->{dims[i]}"


def replace_size(text, old, new):
    """Every static size `old` of every tensor type (and of the static size
    lists of reshapes) becomes `new`."""
    def repl(m):
        dims = [new if d == old else d for d in m.group(1).split("x")[:-1]]
        return "tensor<" + "x".join(dims) + "x" + m.group(2) + ">"
    out = TENSOR.sub(repl, text)
    if new != "?":
        def nums(m):
            return m.group(1) + re.sub(rf"\b{old}\b", new, m.group(2)) + m.group(3)
        out = re.sub(r"(output_shape \[)([^\]]*)(\])", nums, out)
        out = re.sub(r"(static_output_shape = array<i64:)([^>]*)(>)", nums, out)
    return out


def mut_shape_all(text, rng):
    sizes = sorted({d for m in TENSOR.finditer(text) for d in m.group(1).split("x")[:-1]
                    if d != "?"})
    if not sizes:
        return None
    old, new = rng.choice(sizes), rng.choice(EDGE_DIMS)
    out = replace_size(text, old, new)
    return out, f"shape-all:{old}->{new}"


def mut_dtype(text, rng):
    present = sorted({m.group(2) for m in TENSOR.finditer(text)} & set(ETYPES))
    if not present:
        return None
    old, new = rng.choice(present), rng.choice(ETYPES)
    if rng.random() < 0.5:
        out = re.sub(rf"\b{old}\b", new, text)
        return out, f"dtype-all:{old}->{new}"
    m = _pick(rng, (m for m in TENSOR.finditer(text) if m.group(2) == old))
    return _sub(text, m, 2, new), f"dtype-one:{old}->{new}"


def _flash_attrs(text, rng):
    """(match of a flash op line, span of its attribute dict or None)."""
    lines = [m for m in re.finditer(r"^.*= flash\.(attention|attention_backward) .*$", text, re.M)]
    m = _pick(rng, lines)
    if not m:
        return None, None
    line = m.group(0)
    colon = line.rfind(" : ")
    head = line[:colon] if colon > 0 else line
    a = re.search(r"\{([^{}]*)\}\s*$", head)
    return m, a


def _set_attr(text, rng, key, value):
    m, a = _flash_attrs(text, rng)
    if not m:
        return None
    line = m.group(0)
    entry = key if value is None else f"{key} = {value}"
    if a:
        items = [s.strip() for s in a.group(1).split(",") if s.strip()]
        items = [s for s in items if not re.match(rf"{key}\b", s)] + [entry]
        line = line[:a.start()] + "{" + ", ".join(items) + "}" + line[a.end():]
    else:
        colon = line.rfind(" : ")
        line = line[:colon] + " {" + entry + "}" + line[colon:]
    return text[:m.start()] + line + text[m.end():]


def mut_scale(text, rng):
    value = rng.choice(SCALES)
    if re.search(r"scale = [^,}]+ : f32", text) and rng.random() < 0.5:
        return re.sub(r"scale = [^,}]+ : f32", f"scale = {value} : f32", text, count=1), \
            f"scale:{value}"
    out = _set_attr(text, rng, "scale", f"{value} : f32")
    return (out, f"scale:{value}") if out else None


def mut_window(text, rng):
    w = rng.choice(WINDOWS)
    out = _set_attr(text, rng, "window", f"{w} : i64")
    return (out, f"window:{w}") if out else None


def mut_causal(text, rng):
    m, a = _flash_attrs(text, rng)
    if not m:
        return None
    if a and re.search(r"\bcausal\b", a.group(1)):
        line = m.group(0)
        items = [s.strip() for s in a.group(1).split(",") if s.strip() and s.strip() != "causal"]
        new = (" {" + ", ".join(items) + "}") if items else ""
        line = line[:a.start()].rstrip() + new + line[a.end():]
        return text[:m.start()] + line + text[m.end():], "causal:off"
    return _set_attr(text, rng, "causal", None), "causal:on"


def mut_operand(text, rng):
    """Swap an SSA use on one line for another value of the same line, drop
    or duplicate an operand, or drop/add a flash bias/mask clause."""
    lines = text.split("\n")
    cand = [i for i, l in enumerate(lines) if "=" in l and len(re.findall(r"%[\w.$-]+", l)) >= 3]
    if not cand:
        return None
    i = rng.choice(cand)
    line = lines[i]
    eq = line.index("=")
    uses = list(re.finditer(r"%[\w.$-]+", line[eq:]))
    if not uses:
        return None
    kind = rng.choice(["swap", "swap", "drop", "dup", "clause"])
    if kind == "clause" and FLASH_OP.search(line):
        c = re.search(r" (bias|mask)\([^)]*\)", line)
        if c:
            line, label = line[:c.start()] + line[c.end():], f"operand-drop:{c.group(1)}"
        else:
            u = rng.choice(uses).group(0)
            clause = rng.choice(["bias", "mask"])
            ty = re.findall(r"tensor<[^>]*>", line)
            t = rng.choice(ty) if ty else "tensor<4x4xf32>"
            if clause == "mask":
                t = re.sub(r"x[a-z]\w*>$", "xi1>", t)
            ops_end = line.find(" {") if " {" in line else line.rfind(" : ")
            line = line[:ops_end] + f" {clause}({u} : {t})" + line[ops_end:]
            label = f"operand-add:{clause}"
    elif kind == "drop":
        u = rng.choice(uses)
        s, e = eq + u.start(), eq + u.end()
        tail = line[e:]
        if tail.startswith(", "):
            e += 2
        elif line[s - 2:s] == ", ":
            s -= 2
        line, label = line[:s] + line[e:], "operand-drop"
    elif kind == "dup":
        u = rng.choice(uses)
        e = eq + u.end()
        line, label = line[:e] + ", " + u.group(0) + line[e:], "operand-dup"
    else:
        names = sorted({u.group(0) for u in uses})
        if len(names) < 2:
            return None
        u = rng.choice(uses)
        other = rng.choice([n for n in names if n != u.group(0)])
        s, e = eq + u.start(), eq + u.end()
        line, label = line[:s] + other + line[e:], "operand-swap"
    lines[i] = line
    return "\n".join(lines), label


def mut_body(text, rng):
    """Swap an arith/math op in a linalg body, a comparison predicate or
    the select's operands."""
    choice = rng.choice(["binary", "binary", "unary", "cmpf", "cmpi", "select"])
    if choice == "binary":
        m = _pick(rng, re.finditer(r"\b(" + "|".join(map(re.escape, ARITH)) + r")\b", text))
        if m:
            new = rng.choice([a for a in ARITH if a != m.group(1)])
            return _sub(text, m, 1, new), f"body:{m.group(1)}->{new}"
    elif choice == "unary":
        m = _pick(rng, re.finditer(r"\b(" + "|".join(map(re.escape, UNARY)) + r")\b", text))
        if m:
            new = rng.choice([a for a in UNARY if a != m.group(1)])
            return _sub(text, m, 1, new), f"body:{m.group(1)}->{new}"
    elif choice == "cmpf":
        m = _pick(rng, re.finditer(r"arith\.cmpf (\w+)", text))
        if m:
            new = rng.choice(CMPF)
            return _sub(text, m, 1, new), f"body:cmpf-{m.group(1)}->{new}"
    elif choice == "cmpi":
        m = _pick(rng, re.finditer(r"arith\.cmpi (\w+)", text))
        if m:
            new = rng.choice(CMPI)
            return _sub(text, m, 1, new), f"body:cmpi-{m.group(1)}->{new}"
    else:
        m = _pick(rng, re.finditer(r"arith\.select (%[\w.$-]+), (%[\w.$-]+), (%[\w.$-]+)", text))
        if m:
            return (text[:m.start(2)] + m.group(3) + ", " + m.group(2) + text[m.end(3):],
                    "body:select-swap")
    return None


def mut_constant(text, rng):
    if rng.random() < 0.6:
        m = _pick(rng, re.finditer(r"arith\.constant ([-+0-9.eEx]+[0-9A-Fa-f]*) : (f16|bf16|f32|f64)", text))
        if m:
            new = rng.choice(FLOAT_CONSTS)
            if new.startswith("0x") and m.group(2) != "f32":
                new = "0.0"
            return _sub(text, m, 1, new), f"const-float:{new}"
    m = _pick(rng, re.finditer(r"arith\.constant (-?\d+) : (index|i32|i64)", text))
    if m:
        new = rng.choice(INT_CONSTS)
        return _sub(text, m, 1, new), f"const-int:{new}"
    return None


def mut_linalg(text, rng):
    """An iterator type flipped or an indexing map's result changed."""
    if rng.random() < 0.5:
        m = _pick(rng, re.finditer(r'"(parallel|reduction)"', text))
        if m:
            new = "reduction" if m.group(1) == "parallel" else "parallel"
            return _sub(text, m, 1, new), f"linalg-iter:{new}"
    m = _pick(rng, re.finditer(r"affine_map<\(([^)]*)\) -> \(([^)]*)\)>", text))
    if not m:
        return None
    dims = [d.strip() for d in m.group(1).split(",") if d.strip()]
    results = [r.strip() for r in m.group(2).split(",") if r.strip()]
    if not dims or not results:
        return None
    i = rng.randrange(len(results))
    results[i] = rng.choice(dims + ["0"])
    return _sub(text, m, 2, ", ".join(results)), "linalg-map"


def mut_rename(text, rng):
    """Function names whose kernels collide in flash-compile's output: a
    copy of a function named NAME_general, or NAME.x beside NAME_x."""
    funcs = list(re.finditer(r"^func\.func @([\w]+)\(.*?^\}$", text, re.M | re.S))
    if not funcs:
        return None
    f = rng.choice(funcs)
    name = f.group(1)
    if rng.random() < 0.5:
        copy = f.group(0).replace(f"@{name}(", f"@{name}_general(", 1)
        return text + "\n" + copy + "\n", "rename:general"
    a = f.group(0).replace(f"@{name}(", f'@"{name}.x"(', 1)
    b = f.group(0).replace(f"@{name}(", f"@{name}_x(", 1)
    return text + "\n" + a + "\n" + b + "\n", "rename:dot"


MUTATORS = [(mut_shape_one, 3), (mut_shape_all, 4), (mut_dtype, 2), (mut_scale, 2),
            (mut_window, 2), (mut_causal, 1), (mut_operand, 2), (mut_body, 2),
            (mut_constant, 2), (mut_linalg, 1), (mut_rename, 1)]


def mutate(text, rng, depth):
    labels = []
    fns = [f for f, _ in MUTATORS]
    weights = [w for _, w in MUTATORS]
    for _ in range(depth):
        for _attempt in range(6):
            r = rng.choices(fns, weights)[0](text, rng)
            if r and r[0] != text:
                text, label = r
                labels.append(label)
                break
    return text, labels


# ----------------------------------------------------------------------------
# Passes and options
# ----------------------------------------------------------------------------

def _opt(rng, name, valid, edge, p_edge=0.2, p_set=0.5):
    if rng.random() < p_edge:
        return f"{name}={rng.choice(edge)}"
    if rng.random() < p_set:
        return f"{name}={rng.choice(valid)}"
    return None


BLOCKS = [16, 32, 64, 128, 8, 1, 2, 3]
EDGE_INTS = [0, -1, 1, 7, 1000, 2**31, 2**62, INT64_MAX, -(2**63)]


def _pass(name, opts):
    opts = [o for o in opts if o]
    return f"--{name}" + (f'="{" ".join(opts)}"' if opts else "")


def tile_pass(rng):
    return _pass("flash-tile-attention", [
        _opt(rng, "target", ["cpu", "sm_80", "sm_90a"], ["foo", "sm_70", "''"]),
        _opt(rng, "block-rows", BLOCKS, EDGE_INTS), _opt(rng, "block-cols", BLOCKS, EDGE_INTS),
        _opt(rng, "kv-block-rows", BLOCKS, EDGE_INTS, 0.1, 0.2),
        _opt(rng, "kv-block-cols", BLOCKS, EDGE_INTS, 0.1, 0.2),
        _opt(rng, "report", ["true"], ["maybe"], 0.05, 0.3),
        _opt(rng, "key-splits", [0, 1, 2, 3, 9], EDGE_INTS + [65536, 65537], 0.1, 0.2)])


def cpu_pass(rng):
    return _pass("flash-cpu-pipeline", [
        _opt(rng, "tile", ["true", "false"], ["2"], 0.05),
        _opt(rng, "target", ["cpu", "sm_80", "sm_90a"], ["foo"]),
        _opt(rng, "block-rows", BLOCKS, EDGE_INTS, 0.15, 0.3),
        _opt(rng, "block-cols", BLOCKS, EDGE_INTS, 0.15, 0.3)])


def gpu_pass(rng):
    return _pass("flash-gpu-pipeline", [
        _opt(rng, "chip", ["sm_80", "sm_90a"], ["foo", "any", "sm_100"], 0.1, 0.7),
        _opt(rng, "threads", [32, 64, 128, 256], [0, -1, 1, 33, 1024, 1025, 2**31], 0.2, 0.3),
        _opt(rng, "block-rows", BLOCKS, EDGE_INTS, 0.15, 0.3),
        _opt(rng, "block-cols", BLOCKS, EDGE_INTS, 0.15, 0.3),
        _opt(rng, "tensor-cores", ["auto", "mma-sync", "wgmma", "wmma", "none"], ["foo"], 0.05, 0.4),
        _opt(rng, "register-tiles", ["true", "false"], ["7"], 0.02, 0.3),
        _opt(rng, "async-copies", ["true", "false"], ["x"], 0.02, 0.3),
        _opt(rng, "format", ["isa"], ["bin", "foo"], 0.05, 0.2),
        _opt(rng, "load-stages", [1, 2], [0, 3, -1], 0.1, 0.3),
        _opt(rng, "pipeline-key-loops", ["true", "false"], ["2"], 0.05, 0.3),
        _opt(rng, "tma-loads", ["true", "false"], ["2"], 0.05, 0.4),
        _opt(rng, "warp-specialize", ["true", "false"], ["2"], 0.05, 0.4),
        _opt(rng, "ping-pong", ["true", "false"], ["2"], 0.05, 0.3)])


PASSES = [
    ("fuse", lambda r: "--flash-fuse-attention" + ("=report=true" if r.random() < 0.5 else "")),
    ("fuse-backward", lambda r: "--flash-fuse-attention-backward" +
     ("=report=true" if r.random() < 0.3 else "")),
    ("tosa", lambda r: "--flash-tosa-to-attention"),
    ("decompose", lambda r: "--flash-decompose-attention"),
    ("decompose-aggregates", lambda r: "--flash-decompose-aggregates"),
    ("tile", tile_pass),
    ("tile-workspace", lambda r: tile_pass(r) + " --flash-workspace-to-arguments"),
    ("tile-pipeline", lambda r: tile_pass(r) + " --flash-pipeline-key-loops"),
    ("cpu", cpu_pass),
    ("gpu", gpu_pass),
    ("fuse+tile", lambda r: "--flash-fuse-attention --flash-fuse-attention-backward " + tile_pass(r)),
    ("fuse+cpu", lambda r: "--flash-fuse-attention " + cpu_pass(r)),
    ("fuse+gpu", lambda r: "--flash-fuse-attention-backward --flash-fuse-attention " + gpu_pass(r)),
    ("canonicalize", lambda r: "--canonicalize --cse"),
    ("compile", lambda r: "@flash-compile " + " ".join(o for o in [
        _opt(r, "--chip", ["sm_80", "sm_90a"], ["foo"], 0.05, 0.8),
        _opt(r, "--threads-per-block", [0, 128, 256], [-1, 1, 33, 1025, 2**31], 0.2, 0.3),
        _opt(r, "--block-rows", [0, 64, 128], EDGE_INTS, 0.1, 0.3),
        _opt(r, "--block-cols", [0, 32, 64], EDGE_INTS, 0.1, 0.3),
        _opt(r, "--kv-block-cols", [0, 32, 64], EDGE_INTS, 0.1, 0.2),
        _opt(r, "--load-stages", [0, 1, 2], [3, -1], 0.1, 0.2),
        _opt(r, "--tma-loads", ["true", "false"], ["x"], 0.05, 0.3),
        _opt(r, "--warp-specialize", ["true", "false"], ["x"], 0.05, 0.3),
        _opt(r, "--ping-pong", ["true", "false"], ["x"], 0.05, 0.2),
        _opt(r, "--tensor-cores", ["auto", "mma-sync", "wgmma", "wmma", "none"], ["foo"],
             0.05, 0.3)] if o)),
]
FLASH_COMPILE = os.path.join(os.path.dirname(FLASH_OPT), "flash-compile") \
    if os.path.isabs(FLASH_OPT) else "flash-compile"


def run_compile(text, passes):
    """flash-compile of `text` into a fresh directory: (rc, problems, stderr).
    Every manifest must be JSON and name files that were written."""
    import json
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.mlir")
        with open(src, "w") as f:
            f.write(text)
        out = os.path.join(tmp, "out")
        # flash-compile builds two kernels per function: the timeout is per function.
        per = max(1, len(re.findall(r"^\s*func\.func (?!private)", text, re.M)))
        rc, stdout, err, _ = run_limited([FLASH_COMPILE, src, "-o", out] +
                                         shlex.split(passes)[1:], "", LIMITS.timeout * per)
        problems = []
        written = re.findall(r"^\S+: (\S+\.ptx)", stdout, re.M)
        for path in sorted({p for p in written if written.count(p) > 1}):
            problems.append(f"{os.path.basename(path)} written by two kernels (one overwritten)")
        if rc == 0:
            for js in glob.glob(os.path.join(out, "*.json")):
                try:
                    man = json.load(open(js))
                except ValueError as e:
                    problems.append(f"{js}: not JSON: {e}")
                    continue
                for key, value in man.items() if isinstance(man, dict) else []:
                    if isinstance(value, str) and re.search(r"\.(ptx|cubin|json)$", value) and \
                            not os.path.exists(os.path.join(out, os.path.basename(value))):
                        problems.append(f"{os.path.basename(js)}: {key} = {value} was not written")
        return rc, problems, err


def option_labels(passes):
    return [f"opt:{o.lstrip('-')}" for o in re.findall(r"[\w-]+=[^\s\"]+", passes)]


def skipped(labels, skip):
    return any(fnmatch.fnmatchcase(l, pat) for l in labels for pat in skip)


# ----------------------------------------------------------------------------
# The fuzzer's work item: parse one mutant, run its passes
# ----------------------------------------------------------------------------

def clip(err, n=1500):
    return err if len(err) <= 2 * n else err[:n] + "\n[...]\n" + err[-n:]


def fuzz_job(job):
    """job: (index, mutant text, [pass strings]). Returns the parse result and
    one result per pass: (passes, class, rc, stderr head)."""
    index, text, pass_list = job
    results = []
    rc, out, err, _ = run_limited([FLASH_OPT, "-"], text)
    cls = classify(text, "", rc, err, True)
    results.append(("parse", cls, rc, clip(err)))
    if rc != 0:
        return index, False, results
    for passes in pass_list:
        if passes.startswith("@flash-compile"):
            rc, problems, err = run_compile(text, passes)
            if problems:
                err += "\n[manifest check]\n" + "\n".join(problems)
            results.append((passes, classify(text, passes, rc, err, not problems), rc, clip(err)))
            continue
        rc, out, err, _ = run_limited([FLASH_OPT, "-"] + shlex.split(passes), text)
        out_ok = True
        big = [int(n) for n in re.findall(r"\.maxntid (\d+)", out) if int(n) > 1024]
        if rc == 0 and big:
            # CUDA launches at most 1024 threads per block: such a kernel never runs.
            out_ok = False
            err += f"\n[a kernel of {big[0]} threads per block (.maxntid), above CUDA's 1024]"
        elif rc == 0:
            rrc, _, rerr, _ = run_limited([FLASH_OPT, "-"], out)
            out_ok = rrc == 0
            if not out_ok:
                err += "\n[reparse of the output failed]\n" + rerr[:2000]
        results.append((passes, classify(text, passes, rc, err, out_ok), rc, clip(err)))
    return index, True, results


def make_fuzz_job(index, seeds, seed, passes_per_mutant, skip):
    rng = random.Random(f"fuzz:{seed}:{index}")
    name, text = rng.choice(seeds)
    depth = rng.choice([1, 1, 1, 2, 2, 3])
    mutant, labels = mutate(text, rng, depth)
    if skipped(labels + [f"seed:{name}"], skip):
        return None, name, labels
    chosen = rng.sample(PASSES, min(passes_per_mutant, len(PASSES)))
    pass_list = []
    inner = sorted({m.group(1).split("x")[-2] for m in TENSOR.finditer(mutant)})
    for pname, make in chosen:
        p = make(rng)
        # PASS/LABEL: a mutation or seed label for this pass only.
        plabels = option_labels(p) + [f"pass:{pname}"] + \
            [f"{pname}/{l}" for l in labels + [f"seed:{name}"]]
        if pname == "compile":
            plabels += [f"compile-d:{d}" for d in inner]
        if not skipped(plabels, skip):
            pass_list.append(p)
    return (index, mutant, pass_list), name, labels


# ----------------------------------------------------------------------------
# Differential tester
# ----------------------------------------------------------------------------

def _dims(rng):
    return rng.choice([1, 1, 2, 3, 5, 8, 16, 17, 31, 33, 64, 77])


def make_diff_case(index, seed, skip=()):
    """A random flash.attention configuration in cpu_check's argument form
    (drawn again while its labels match `skip`)."""
    for attempt in range(50):
        a = _draw_diff_case(random.Random(f"diff:{seed}:{index}:{attempt}"))
        if not skipped(a.labels, skip):
            return a
    return a


def _draw_diff_case(rng):
    rank = rng.choice([4, 4, 4, 3, 2])
    b = rng.choice([1, 1, 2, 3]) if rank == 4 else 1
    hkv = rng.choice([1, 1, 2]) if rank >= 3 else 1
    hq = hkv * rng.choice([1, 1, 2, 3]) if rank >= 3 else 1
    m, n = _dims(rng), _dims(rng)
    d = rng.choice([4, 8, 16, 32, 64])
    dv = rng.choice([None, None, 4, 8, 24])
    dtype = rng.choice(["f32", "f16", "bf16"])
    a = SimpleNamespace(
        b=b, hq=hq, hkv=hkv, m=m, n=n, d=d, dv=dv, dtype=dtype, rank=rank,
        causal=rng.random() < 0.35, scale=None, window=None, bias=None,
        bias_dtype=rng.choice(["f32", dtype]), mask=None, masked_row=False,
        dynamic="", mode=rng.choice(["fwd", "fwd", "bwd"]), block_rows=0, block_cols=0,
        target=rng.choice(["cpu", "cpu", "sm_80", "sm_90a"]))
    if rng.random() < 0.3:
        a.scale = rng.choice([0.5, 0.125, 1.0, 0.0, -0.3, 2.0, 0.01])
    if rng.random() < 0.3:
        a.window = rng.choice([0, 1, 3, 16, 100, 2**40, INT64_MAX, INT64_MAX - 1])
    if a.mode == "bwd":
        # Rows that see one or two keys have gradients that cancel to ~0
        # (dS = P (dP - D)), against which a normwise comparison measures
        # only rounding (f16 O in D = rowsum(dO O)): keep several keys visible.
        a.n = n = max(a.n, 8)
        if a.window is not None:
            a.window = max(a.window, 8)
    lead4 = [b, hq, m, n]
    lead = lead4[4 - rank:]

    def broadcast():
        shape = [x if rng.random() < 0.6 else 1 for x in lead]
        if rng.random() < 0.3:
            shape = shape[rng.randrange(len(shape)):] or [lead[-1]]
        return "x".join(map(str, shape))
    if rng.random() < 0.3:
        a.bias = broadcast()
    if rng.random() < 0.3:
        a.mask = broadcast()
        a.masked_row = rng.random() < 0.3 and len(a.mask.split("x")) >= 2 and \
            a.mask.split("x")[-2] == str(m)
    a.dynamic = "".join(l for l in "bhmn" if rng.random() < 0.25)
    if rng.random() < 0.4:
        a.block_rows = rng.choice([1, 2, 4, 8, 16, 32, 64])
        a.block_cols = rng.choice([1, 2, 4, 8, 16, 32, 64])
    a.no_tile = rng.random() < 0.15
    a.labels = [f"diff-window:{a.window}", f"diff-scale:{a.scale}", f"diff-dtype:{dtype}",
                f"diff-mode:{a.mode}"]
    # Drawn last, so that the cases drawn before sinks existed stay as they were.
    a.sinks = rng.random() < 0.25
    a.sinks_dtype = rng.choice(["f32", dtype])
    a.labels.append(f"diff-sinks:{a.sinks}")
    # Split-KV (a tiled forward's keys in runs merged by their LSE), after
    # the sinks for the same reason.
    a.key_splits = rng.choice([0, 0, 0, 2, 3, 9])
    if a.mode != "fwd" or a.no_tile:
        a.key_splits = 0
    a.labels.append(f"diff-key-splits:{a.key_splits > 0}")
    # Ragged KV caches (rank-4 forwards), drawn after the key splits.
    a.key_lengths = rng.choice([None, None, None, "edges", "random"])
    if a.rank != 4 or a.mode != "fwd":
        a.key_lengths = None
    a.labels.append(f"diff-key-lengths:{a.key_lengths is not None}")
    # With a ragged cache, half the time paged (a page size dividing N).
    a.paged = None
    if a.key_lengths and rng.random() < 0.5:
        a.paged = rng.choice([p for p in (1, 2, 4, 8, 16) if a.n % p == 0])
    a.labels.append(f"diff-paged:{a.paged is not None}")
    # Packed variable-length sequences (one batch, no bias, mask or pages),
    # drawn after the pages.
    a.varlen = None
    if rng.random() < 0.2 and a.rank >= 3 and a.b == 1 and not (a.bias or a.mask or a.paged):
        count = rng.choice([0, 1, 2, 3, 5])
        queries = [rng.choice([0, 1, 2, 5, 8, 17]) for _ in range(count)]
        # The backward keeps several keys per sequence (see above).
        key_counts = [0, 1, 3, 8, 17, 33] if a.mode == "fwd" else [0, 8, 17, 33]
        keys = [rng.choice(key_counts) for _ in range(count)]
        a.varlen, a.varlen_keys = ",".join(map(str, queries)), ",".join(map(str, keys))
        a.pad_rows = rng.choice([0, 1, 3])
        a.varlen_dtype = rng.choice(["i32", "i64"])
        a.m, a.n = sum(queries) + a.pad_rows, sum(keys) + a.pad_rows
        a.masked_row = False
        # The batch of packed sequences is a static 1; the offsets' size may
        # be dynamic.
        a.dynamic = a.dynamic.replace("b", "") + ("s" if rng.random() < 0.3 else "")
        # The caller's bounds (max_seqlen_q/_k) as tagged arguments at times.
        a.max_seqlen_args = rng.choice([None, None, "index", "i32", "i64"])
    a.labels.append(f"diff-varlen:{a.varlen is not None}")
    return a


def describe(a):
    parts = [f"--mode {a.mode} --rank {a.rank} --b {a.b} --hq {a.hq} --hkv {a.hkv} "
             f"--m {a.m} --n {a.n} --d {a.d}" + (f" --dv {a.dv}" if a.dv else ""),
             f"--dtype {a.dtype}"]
    for flag in ("causal", "masked_row", "no_tile"):
        if getattr(a, flag):
            parts.append("--" + flag.replace("_", "-"))
    if getattr(a, "sinks", False):
        parts.append(f"--sinks --sinks-dtype {a.sinks_dtype}")
    if getattr(a, "key_lengths", None):
        parts.append(f"--key-lengths {a.key_lengths}")
    if getattr(a, "paged", None):
        parts.append(f"--paged {a.paged}")
    if getattr(a, "varlen", None) is not None:
        parts.append(f"--varlen '{a.varlen}' --varlen-keys '{a.varlen_keys}' "
                     f"--pad-rows {a.pad_rows} --varlen-dtype {a.varlen_dtype}")
        if getattr(a, "max_seqlen_args", None):
            parts.append(f"--max-seqlen-args {a.max_seqlen_args}")
    for key in ("scale", "window", "bias", "mask"):
        if getattr(a, key) is not None:
            parts.append(f"--{key} {getattr(a, key)}")
    if a.bias:
        parts.append(f"--bias-dtype {a.bias_dtype}")
    if a.dynamic:
        parts.append(f"--dynamic {a.dynamic}")
    parts.append(f"--target {a.target} --block-rows {a.block_rows} --block-cols {a.block_cols}")
    return " ".join(parts)


def _install_limits():
    from flash_mlir import cpu_check, fusion_check
    cpu_check.subprocess = _LimitedSubprocess()
    fusion_check.subprocess = _LimitedSubprocess()


def diff_job(job):
    """One random program: tiled (or naive) CPU run against float64, and for
    forward programs its decomposed linalg form unfused against fused.
    Returns (index, [(kind, status, detail)])."""
    index, seed, skip = job
    import numpy as np
    from flash_mlir import cpu_check, fusion_check
    _install_limits()
    a = make_diff_case(index, seed, skip)
    if skipped(a.labels, skip):
        return index, [("ref", "skipped", " ".join(a.labels))], None
    a.seed = index
    opts = f"block-rows={a.block_rows} block-cols={a.block_cols} target={a.target}"
    if a.no_tile:
        opts += " tile=false"
    a.passes = f'--flash-cpu-pipeline="{opts}"'
    if getattr(a, "key_splits", 0):
        a.passes = (f'--flash-tile-attention="{opts} key-splits={a.key_splits}" '
                    '--flash-cpu-pipeline="tile=false"')
    cmd = "python3 -m flash_mlir.cpu_check " + describe(a) + f" --seed {index}"
    if getattr(a, "key_splits", 0):
        cmd += f" --passes '{a.passes}'"
    out = []
    rng = np.random.default_rng(index)
    try:
        ops, full = cpu_check.make_inputs(a, rng)
    except SystemExit as e:
        return index, [("ref", "skip", str(e))], None
    program, results = cpu_check.build_program(a, ops)
    # The reference's window arithmetic is int64: a window past M + N hides
    # nothing more, so it gets the same semantics from a clamped value.
    window = None if a.window is None else min(a.window, 2**40)
    common = dict(scale=a.scale, causal=a.causal, bias=full.get("bias"),
                  mask=full.get("mask"), window=window, sinks=full.get("sinks"))
    if "key_lengths" in full:
        common["key_lengths"] = full["key_lengths"]
    want = cpu_check.expected_results(a, full, common)
    try:
        got = cpu_check.parse_outputs(cpu_check.run_program(program, a.passes), results)
        msgs, ok = [], True
        for name, shape, et, _ in results:
            good, msg = cpu_check.compare(name, got[name], want[name].reshape(shape),
                                          cpu_check.tolerance(name, et, a.dtype))
            ok &= good
            msgs.append(msg)
        out.append(("ref", "pass" if ok else "MISMATCH", cmd + "\n" + "; ".join(msgs)))
    except subprocess.TimeoutExpired:
        out.append(("ref", "HANG", cmd))
    except RuntimeError as e:
        out.append(("ref", "FAILED", cmd + "\n" + str(e)[:3000]))
    letters = sorted(set(a.dynamic) & set("bhmn"[4 - a.rank:] if a.rank < 4 else "bhmn"))
    sizes = {"b": a.b, "h": a.hq, "m": a.m, "n": a.n}
    # A ragged cache's decomposed form (masks and a zeroed V from its
    # lengths) is left to the reference check: fusion_check draws no lengths.
    if a.mode == "fwd" and not getattr(a, "key_lengths", None) and \
            getattr(a, "varlen", None) is None and \
            len({sizes[l] for l in letters} | ({a.hkv} if "h" in letters else set())) <= 1:
        # fusion_check gives every dynamic size one value: the program's own.
        dyn = sizes[letters[0]] if letters else 6
        func = program.split("func.func @main")[0]
        rc, dec, err, _ = run_limited([FLASH_OPT, "-", "--flash-decompose-attention"], func)
        if rc != 0:
            out.append(("fusion", "FAILED", cmd + "\ndecomposition failed:\n" + err[:3000]))
        else:
            dec = strip_module(dec)
            item = fusion_run(dec, f"decomposed form of: {cmd}", index, dyn)
            out.append(item)
            if item[1] in ("MISMATCH", "FAILED", "HANG"):
                return index, out, dec
    return index, out, program


def strip_module(text):
    """The functions of flash-opt's print without the implicit module."""
    m = re.search(r"^module \{$", text, re.M)
    end = text.rstrip().rfind("}")
    if not m or end < m.end():
        return text
    return text[:m.start()] + text[m.end():end] + "\n"


def fusion_run(text, what, seed, dyn=6):
    """Unfused against fused through fusion_check.check_chunks on `text`."""
    from flash_mlir import fusion_check
    _install_limits()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "input.mlir")
        with open(path, "w") as f:
            f.write(text)
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                failures = fusion_check.check_chunks(
                    path, "--flash-cpu-pipeline", "--flash-fuse-attention --flash-cpu-pipeline",
                    dyn, seed, marker="flash.attention", marker_passes="--flash-fuse-attention")
        except subprocess.TimeoutExpired:
            return ("fusion", "HANG", what)
    log = buf.getvalue()
    fused = "(fused)" in log
    if failures:
        return ("fusion", "MISMATCH", what + "\n" + log[:3000])
    return ("fusion", "pass-fused" if fused else ("pass-unfused" if "PASS" in log else "skip"),
            what)


FUSION_SEEDS = ("test/Transforms/flash-fuse-attention.mlir",
                "test/Transforms/flash-fuse-attention-torch-graph.mlir",
                "test/Tools/fusion-check-inputs.mlir")


def fusion_mutant_job(job):
    """A fusion lit test chunk with its sizes changed consistently (one size
    replaced everywhere by another small one), unfused against fused."""
    index, seed, chunks = job
    rng = random.Random(f"fusion:{seed}:{index}")
    name, text = rng.choice(chunks)
    sizes = sorted({d for m in TENSOR.finditer(text) for d in m.group(1).split("x")[:-1]
                    if d != "?" and d != "1"})
    label = "unchanged"
    if sizes:
        old, new = rng.choice(sizes), str(rng.choice([1, 2, 3, 5, 7, 9, 12, 24]))
        text = replace_size(text, old, new)
        label = f"shape-all:{old}->{new}"
    rc, _, _, _ = run_limited([FLASH_OPT, "-"], text)
    if rc != 0:
        return index, [("fusion-mutant", "skip", name)], text
    return index, [fusion_run(text, f"{name} with {label}", index)], text


# ----------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------

def _init_worker(timeout, mem_bytes):
    LIMITS.timeout = timeout
    LIMITS.mem_bytes = mem_bytes


def write_finding(out_dir, n, cls, text, header):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{n:03d}-{cls.lower()}.mlir")
    with open(path, "w") as f:
        for line in header.splitlines():
            f.write("// " + line + "\n")
        f.write(text)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget-seconds", type=float, default=60.0,
                   help="wall-clock budget of the fuzzer and of the differential tester each")
    p.add_argument("--max-runs", type=int, default=0,
                   help="stop the fuzzer after this many flash-opt runs (0: no limit)")
    p.add_argument("--max-mutants", type=int, default=0, help="0: no limit")
    p.add_argument("--diff-cases", type=int, default=0,
                   help="random programs of the differential tester (0: until its budget)")
    p.add_argument("--fusion-mutants", type=int, default=-1,
                   help="shape-mutated fusion lit tests run unfused and fused "
                        "(-1: a quarter of the random programs)")
    p.add_argument("--diff-budget-seconds", type=float, default=None,
                   help="budget of the differential tester (default: --budget-seconds)")
    p.add_argument("--passes-per-mutant", type=int, default=6)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per tool run")
    p.add_argument("--mem-gib", type=float, default=4.0, help="address-space limit per tool run")
    p.add_argument("--out", default="fuzz-findings", help="directory of the findings' inputs")
    p.add_argument("--skip", action="append", default=[],
                   help="fnmatch pattern of mutation or option labels to leave out "
                        "(known open findings, docs/Fuzzing.md)")
    p.add_argument("--no-fuzz", action="store_true")
    p.add_argument("--no-diff", action="store_true")
    p.add_argument("--root", default=REPO, help="repository whose test/ and examples/ seed it")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    skip = [s for pat in args.skip for s in pat.split(",") if s]
    mem = int(args.mem_gib * (1 << 30))
    _init_worker(args.timeout, mem)
    start = time.monotonic()
    findings = []
    seen = set()
    counts = {}
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=args.jobs, initializer=_init_worker, initargs=(args.timeout, mem))

    def finding(cls, sig, text, header):
        if sig in seen:
            return
        seen.add(sig)
        path = write_finding(args.out, len(findings) + 1, cls, text, header)
        findings.append((cls, sig, path))
        print(f"FINDING {cls}: {sig}\n  input: {path}", flush=True)

    def drain(submit, handle, stop):
        """Runs jobs in index order with `jobs * 2` in flight; results are
        handled in order so that the counts are deterministic."""
        inflight = []
        index = 0
        while True:
            while len(inflight) < args.jobs * 2 and not stop(index, True):
                fut = submit(index)
                index += 1
                if fut is not None:
                    inflight.append(fut)
            if not inflight:
                break
            fut = inflight.pop(0)
            handle(fut.result())
            if stop(index, False):
                for f in inflight:
                    f.cancel()
                break

    # ---------------------------------------------------------------- fuzzer
    fz = dict(mutants=0, valid=0, runs=0, skipped=0)
    classes = {}
    if not args.no_fuzz:
        seeds = load_seeds(args.root) + synthetic_seeds()
        pending = {}

        def submit(i):
            job, name, labels = make_fuzz_job(i, seeds, args.seed, args.passes_per_mutant, skip)
            if job is None:
                fz["skipped"] += 1
                return None
            pending[i] = (name, labels, job[1])
            return pool.submit(fuzz_job, job)

        def handle(res):
            i, valid, results = res
            name, labels, text = pending.pop(i)
            fz["mutants"] += 1
            fz["valid"] += valid
            for passes, cls, rc, err in results:
                fz["runs"] += 1
                classes[cls] = classes.get(cls, 0) + 1
                if args.verbose:
                    print(f"  [{i}] {cls:9} {passes}  ({name}: {', '.join(labels)})")
                if cls in FINDINGS:
                    cmd = f"flash-compile this.mlir -o DIR {passes[15:]}" \
                        if passes.startswith("@") else f"flash-opt this.mlir {passes}"
                    header = (f"fuzz finding {cls}: {cmd}  (exit {rc})\n"
                              f"seed chunk {name}, mutations: {', '.join(labels)}, "
                              f"fuzz --seed {args.seed} mutant {i}\n" + err)
                    finding(cls, signature(cls, passes, err, rc), text, header)

        def stop(i, before_submit):
            if time.monotonic() - start > args.budget_seconds:
                return True
            if args.max_runs and fz["runs"] >= args.max_runs:
                return True
            return bool(args.max_mutants) and before_submit and i >= args.max_mutants

        drain(submit, handle, stop)
    fuzz_time = time.monotonic() - start

    # ------------------------------------------------------ differential tester
    dt = {}
    if not args.no_diff:
        dstart = time.monotonic()
        budget = args.diff_budget_seconds if args.diff_budget_seconds is not None \
            else args.budget_seconds
        chunks = []
        for rel in FUSION_SEEDS:
            path = os.path.join(args.root, rel)
            if os.path.exists(path):
                for k, c in enumerate(open(path).read().split("// -----")):
                    c = "\n".join(l for l in c.splitlines() if not l.lstrip().startswith("//"))
                    if "func.func" in c:
                        chunks.append((f"{rel}#{k}", c))
        n_fusion = args.fusion_mutants if args.fusion_mutants >= 0 else \
            (args.diff_cases // 4 if args.diff_cases else 0)
        state = dict(random=0, fusion=0)

        def dsubmit(i):
            # Every fourth job is a fusion mutant (while they last), the rest random programs.
            if chunks and i % 4 == 3 and (args.fusion_mutants < 0 and not args.diff_cases
                                          or state["fusion"] < n_fusion):
                state["fusion"] += 1
                return pool.submit(fusion_mutant_job, (i, args.seed, chunks))
            if args.diff_cases and state["random"] >= args.diff_cases:
                return None
            state["random"] += 1
            return pool.submit(diff_job, (i, args.seed, skip))

        def dhandle(res):
            i, items = res[0], res[1]
            text = res[2] if len(res) > 2 else None
            for kind, status, detail in items:
                key = f"{kind}:{status}"
                dt[key] = dt.get(key, 0) + 1
                if args.verbose:
                    print(f"  [d{i}] {key:22} {detail.splitlines()[0][:150]}")
                if status in ("MISMATCH", "FAILED", "HANG"):
                    # Distinct inputs, but at most 10 files per kind of failure.
                    per = dt.setdefault(f"_{key}", [0])
                    per[0] += 1
                    sig = f"{status} {kind} {i}" if per[0] <= 10 else f"{status} {kind} more"
                    body = text or ""
                    finding(f"diff-{status}", sig, body,
                            f"differential finding {kind} {status} (case {i}, --seed "
                            f"{args.seed})\n{detail}")

        def dstop(i, before_submit):
            if time.monotonic() - dstart > budget:
                return True
            if args.diff_cases and before_submit:
                return state["random"] >= args.diff_cases and \
                    (state["fusion"] >= n_fusion or not chunks)
            return False

        drain(dsubmit, dhandle, dstop)
    pool.shutdown(wait=True, cancel_futures=True)

    total = time.monotonic() - start
    cls_text = " ".join(f"{k}={classes[k]}" for k in sorted(classes))
    dt_text = " ".join(f"{k}={dt[k]}" for k in sorted(dt) if not k.startswith("_"))
    print(f"fuzz: seed={args.seed} mutants={fz['mutants']} valid={fz['valid']} "
          f"runs={fz['runs']} skipped-mutants={fz['skipped']} [{cls_text}] in {fuzz_time:.0f}s")
    print(f"diff: [{dt_text}] in {total - fuzz_time:.0f}s")
    print(f"fuzz summary: {len(findings)} finding(s) in {total:.0f}s")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
