"""Executes attention through flash-opt and mlir-runner on the CPU and
compares the numbers with the float64 reference.

    python3 -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 77 --n 33 --d 16 \
        --dtype f16 --causal --dynamic mn
    python3 -m flash_mlir.cpu_check FILE [--target T --block-rows R ...]

It writes an MLIR program with random inputs baked in as constants (exact
bit patterns), compiles it with `flash-opt <passes>` (default
`--flash-cpu-pipeline`), runs it with mlir-runner, reads the outputs back as
raw f32 bit patterns and checks them against reference.py. Exit status 0
means every output is within tolerance. Tools come from $FLASH_OPT,
$MLIR_RUNNER and $MLIR_RUNNER_LIBS (set by lit), or from PATH.

With FILE (any valid MLIR file, split at `// -----`), every public function
of it runs on random inputs twice, as fusion_check runs them: through the
naive decomposition (`--flash-cpu-pipeline="tile=false"`, the reference
semantics) and through the pipeline with the tiling options given here, and
the two must agree within the element type's tolerance. One line per
function, then "cpu_check: N failure(s)".
"""

import argparse
import functools
import os
import re
import shlex
import subprocess
import sys
import tempfile

import numpy as np

from flash_mlir import reference

# Normwise tolerances: |x - ref| <= rtol * (|ref| + max|ref|) elementwise.
TOLERANCE = {"f32": 1e-5, "f16": 2e-3, "bf16": 1.6e-2}


def tolerance(name, et, dtype):
    """The tolerance of result `name` of element type `et` in a program on
    `dtype` inputs: d sinks, whose D = rowsum(dO O) reads the O rounded to the
    inputs' type, takes the looser of the two."""
    if name == "dsinks":
        return max(TOLERANCE[et], TOLERANCE[dtype])
    return TOLERANCE[et]


# ----------------------------------------------------------------------------
# Values
# ----------------------------------------------------------------------------

def quantize(x, dtype):
    """Rounds float64 data to `dtype`, returned as float32 holding exact
    values (bf16 via round-to-nearest-even on the f32 bit pattern)."""
    x32 = np.asarray(x, dtype=np.float32)
    if dtype == "f32":
        return x32
    if dtype == "f16":
        return x32.astype(np.float16).astype(np.float32)
    bits = x32.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return rounded.astype(np.uint32).view(np.float32)


def hex_bytes(x, dtype):
    if dtype in ("i32", "i64"):
        data = np.ascontiguousarray(x, dtype="<i4" if dtype == "i32" else "<i8")
        return "0x" + data.tobytes().hex().upper()
    if dtype == "f32":
        data = np.ascontiguousarray(x, dtype="<f4").tobytes()
    elif dtype == "f16":
        data = np.ascontiguousarray(x.astype(np.float16), dtype="<f2").tobytes()
    else:
        bits = (np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) >> 16)
        data = bits.astype("<u2").tobytes()
    return "0x" + data.hex().upper()


def bool_literal(x):
    if x.size == 0:
        return ""  # dense<> : the nested [] of an empty array give a wrong shape
    if x.ndim == 0:
        return "true" if bool(x) else "false"
    return "[" + ", ".join(bool_literal(e) for e in x) + "]"


# ----------------------------------------------------------------------------
# Program
# ----------------------------------------------------------------------------

def tensor_type(shape, et, dynamic=()):
    dims = ["?" if d else str(s) for s, d in zip(shape, dynamic)] if dynamic \
        else [str(s) for s in shape]
    return "tensor<" + "x".join(dims + [et]) + ">"


class Operand:
    def __init__(self, name, value, et, letters, dyn_letters):
        self.name = name
        self.value = value
        self.et = et
        self.shape = list(value.shape)
        dynamic = [l is not None and l in dyn_letters for l in letters]
        self.static_type = tensor_type(self.shape, et)
        self.type = tensor_type(self.shape, et, dynamic)

    def constant(self):
        if self.et == "i1":
            body = bool_literal(self.value)
        else:
            body = '"' + hex_bytes(self.value, self.et) + '"'
        lines = [f"    %{self.name}_c = arith.constant dense<{body}> : {self.static_type}"]
        if self.type != self.static_type:
            lines.append(f"    %{self.name} = tensor.cast %{self.name}_c : "
                         f"{self.static_type} to {self.type}")
        return lines

    def ssa(self):
        return f"%{self.name}" if self.type != self.static_type else f"%{self.name}_c"


def result_printer(name, shape, et, dyn_type):
    """Lines that print result `name` as raw f32 bits through printMemrefI32.
    An empty result has nothing to print (and printMemref misprints a
    leading 0 dimension as a full row), so it is only computed."""
    if 0 in shape:
        return []
    static = tensor_type(shape, et)
    i32 = tensor_type(shape, "i32")
    rank = len(shape)
    ident = "affine_map<(" + ", ".join(f"d{i}" for i in range(rank)) + ") -> (" + \
        ", ".join(f"d{i}" for i in range(rank)) + ")>"
    iters = ", ".join(['"parallel"'] * rank)
    ext = f"      %x = arith.extf %a : {et} to f32\n" if et != "f32" else ""
    val = "%x" if et != "f32" else "%a"
    lines = []
    src = f"%{name}"
    if dyn_type != static:
        lines.append(f"    %{name}_s = tensor.cast %{name} : {dyn_type} to {static}")
        src = f"%{name}_s"
    lines += [
        f"    %{name}_e = tensor.empty() : {i32}",
        f"    %{name}_i = linalg.generic {{indexing_maps = [{ident}, {ident}], "
        f"iterator_types = [{iters}]}} ins({src} : {static}) outs(%{name}_e : {i32}) {{",
        f"    ^bb0(%a: {et}, %unused: i32):",
        ext + f"      %i = arith.bitcast {val} : f32 to i32",
        "      linalg.yield %i : i32",
        f"    }} -> {i32}",
        f"    %{name}_u = tensor.cast %{name}_i : {i32} to tensor<*xi32>",
        f"    call @printMemrefI32(%{name}_u) : (tensor<*xi32>) -> ()",
    ]
    return lines


def float_literal(x):
    """repr(x) in MLIR's syntax, which wants a point in the mantissa: '1e+30'
    does not parse, '1.0e+30' does."""
    text = repr(float(x))
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        text = f"{mantissa}.0e{exponent}"
    return text


def runtime_scale(args):
    """Whether the forward takes its scale as the runtime_scale operand (a
    namespace built by another tool, as the fuzzer's, may not have it)."""
    return getattr(args, "runtime_scale", False)


def score_mod_text(args, ops):
    """The op's score_mod region for --softcap / --alibi (empty without)."""
    softcap = getattr(args, "softcap", None)
    alibi = "alibi" in ops
    batch_bias = "batch_bias" in ops
    if softcap is None and not alibi and not batch_bias:
        return ""
    lines = [" score_mod {",
             "    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):"]
    value = "%s"
    if softcap is not None:
        lines += [f"      %cap = arith.constant {float_literal(softcap)} : f32",
                  "      %x = arith.divf %s, %cap : f32",
                  "      %t = math.tanh %x : f32",
                  "      %capped = arith.mulf %t, %cap : f32"]
        value = "%capped"
    if alibi:
        lines += [f"      %slope = tensor.extract %alibi[%h] : {ops['alibi'].type}",
                  "      %rel = arith.subi %j, %i : index",
                  "      %rel64 = arith.index_cast %rel : index to i64",
                  "      %relf = arith.sitofp %rel64 : i64 to f32",
                  "      %term = arith.mulf %slope, %relf : f32",
                  f"      %biased = arith.addf {value}, %term : f32"]
        value = "%biased"
    if batch_bias:
        lines += [f"      %bb = tensor.extract %batch_bias[%b] : {ops['batch_bias'].type}",
                  f"      %shifted = arith.addf {value}, %bb : f32"]
        value = "%shifted"
    lines += [f"      flash.yield {value} : f32", "    }"]
    return "\n".join(lines)


def attrs_text(args):
    attrs = []
    if args.causal:
        attrs.append("causal")
    if args.scale is not None and not runtime_scale(args):
        attrs.append(f"scale = {float_literal(args.scale)} : f32")
    if args.window is not None:
        attrs.append(f"window = {args.window} : i64")
    return (" {" + ", ".join(attrs) + "}") if attrs else ""


def make_pages(args, rng, ops, full, dyn):
    """--paged P: K and V as a shuffled pool of pages [num_pages, Hkv, P, D]
    (three spare pages no sequence names) and a block table [B, N / P]. What
    the op must never read is poisoned: the rows past a sequence's length
    and the unused pages are NaN, and the table's entries past its last
    page name page 2^30."""
    ps, (b, hkv, n, _) = args.paged, full["k"].shape
    if "key_lengths" not in full or args.rank != 4 or ps < 1 or n % ps:
        raise SystemExit("cpu_check: --paged needs --key-lengths, rank 4 and N "
                         "a multiple of the page size")
    per = n // ps
    pool_pages = b * per + 3
    table = rng.permutation(pool_pages)[:b * per].reshape(b, per).astype(np.int32)
    lengths = np.clip(full["key_lengths"].astype(np.int64), 0, n)
    for name in ("k", "v"):
        dense = full[name]
        pool = np.full((pool_pages, hkv, ps, dense.shape[3]), np.nan, dtype=np.float32)
        for i in range(b):
            for slot in range(-(-int(lengths[i]) // ps)):
                rows = dense[i, :, slot * ps:(slot + 1) * ps].copy()
                rows[:, max(int(lengths[i]) - slot * ps, 0):] = np.nan
                pool[table[i, slot]] = rows
        ops[name] = Operand(name, pool, args.dtype, [None, "h", None, None], dyn)
    for i in range(b):
        table[i, -(-int(lengths[i]) // ps):] = 2**30
    ops["block_table"] = Operand("block_table", table, "i32", ["b", None], dyn)


def varlen_lengths(args):
    """--varlen's query lengths and the keys' (--varlen-keys, else the
    same), as lists of ints."""
    def parse(text):
        return [int(x) for x in text.split(",")] if text else []
    queries = parse(args.varlen)
    keys = parse(args.varlen_keys) if args.varlen_keys is not None else queries
    if len(keys) != len(queries) or min(queries + keys, default=0) < 0:
        raise SystemExit("cpu_check: --varlen and --varlen-keys need as many "
                         "non-negative lengths")
    return queries, keys


def make_packed(args, rng, ops, full, dyn):
    """--varlen: cu_seqlens_q and cu_seqlens_k [S + 1] over the packed rows
    of Q and K/V (B = 1), --pad-rows more rows after the last sequence. What
    the op must never read is NaN: the query and key rows past the last
    sequence (dO's too), and with key_lengths (seqused_k) each sequence's
    keys past its count."""
    queries, keys = varlen_lengths(args)
    et = args.varlen_dtype
    for name, lengths in (("cu_seqlens_q", queries), ("cu_seqlens_k", keys)):
        cu = np.concatenate([[0], np.cumsum(lengths)]).astype(
            np.int32 if et == "i32" else np.int64)
        ops[name] = Operand(name, cu, et, ["s"], dyn)
        full[name] = cu
    if "key_lengths" in full:
        # One count per sequence (seqused_k): edges 0, all, 1, then random.
        used = rng.integers(0, np.array(keys) + 1)
        if args.key_lengths == "edges":
            edges = [0, keys[1] if len(keys) > 1 else 0, 1][:len(keys)]
            used[:len(edges)] = np.minimum(edges, keys[:len(edges)])
        used = used.astype(full["key_lengths"].dtype)
        ops["key_lengths"] = Operand("key_lengths", used, ops["key_lengths"].et,
                                     ["s"], dyn)
        full["key_lengths"] = used
    rank_lead = 4 - args.rank
    cu_q, cu_k = full["cu_seqlens_q"], full["cu_seqlens_k"]
    for name in [n for n in ("q", "do") if n in full]:
        full[name][:, :, cu_q[-1]:] = np.nan
    for name in ("k", "v"):
        full[name][:, :, cu_k[-1]:] = np.nan
        if "key_lengths" in full:
            for s, used in enumerate(full["key_lengths"]):
                full[name][:, :, cu_k[s] + used:cu_k[s + 1]] = np.nan
    for name in [n for n in ("q", "k", "v", "do") if n in full]:
        ops[name].value = full[name].reshape(full[name].shape[rank_lead:])


def packed_bounds(args, ops):
    """--max-seqlen-args: the packed sequences' most query and key rows (the
    rows past the last sequence counted as one more) as function arguments
    tagged for the tiling, [(name, tag, value)]."""
    if not getattr(args, "max_seqlen_args", None) or "cu_seqlens_q" not in ops:
        return []
    queries, keys = varlen_lengths(args)
    return [("max_seqlen_q", "flash.max_seqlen_q", max(queries + [args.pad_rows])),
            ("max_seqlen_k", "flash.max_seqlen_k", max(keys + [args.pad_rows]))]


def build_program(args, ops):
    """ops: dict of Operands (q, k, v, [do], [bias], [mask])."""
    q, k, v = ops["q"], ops["k"], ops["v"]
    rank = len(q.shape)
    letters_o = ["b", "h", "m", None][4 - rank:]
    dyn = set(args.dynamic)
    o_shape = q.shape[:-1] + [v.shape[-1]]
    o_type = tensor_type(o_shape, args.dtype, [l is not None and l in dyn for l in letters_o])
    lse_shape = q.shape[:-1]
    lse_type = tensor_type(lse_shape, "f32", [l is not None and l in dyn for l in letters_o[:-1]])
    opt = ""
    if "bias" in ops:
        opt += f" bias(%bias : {ops['bias'].type})"
    if "mask" in ops:
        opt += f" mask(%mask : {ops['mask'].type})"
    if "sinks" in ops:
        opt += f" sinks(%sinks : {ops['sinks'].type})"
    if "key_lengths" in ops:
        opt += f" key_lengths(%key_lengths : {ops['key_lengths'].type})"
    if "block_table" in ops:
        opt += f" block_table(%block_table : {ops['block_table'].type})"
    packed = ""
    for name in ("cu_seqlens_q", "cu_seqlens_k"):
        if name in ops:
            packed += f" {name}(%{name} : {ops[name].type})"
    opt += packed
    if runtime_scale(args):
        opt += " runtime_scale(%scale)"
    mod = score_mod_text(args, ops)
    qkv_types = f"{q.type}, {k.type}, {v.type}"
    params = [o for o in ops.values()]  # --alibi's slopes are one of them
    sig = ", ".join(f"%{o.name}: {o.type}" for o in params)
    if runtime_scale(args):
        sig += ", %scale: f32"
    bounds = packed_bounds(args, ops)
    for name, tag, _ in bounds:
        sig += f", %{name}: {args.max_seqlen_args} {{flash.{name}}}"
    fwd = (f"    %o, %lse = flash.attention %q, %k, %v{opt}{attrs_text(args)}\n"
           f"        : {qkv_types} -> {o_type}, {lse_type}{mod}")
    if args.mode == "fwd":
        results = [("o", o_shape, args.dtype, o_type), ("lse", lse_shape, "f32", lse_type)]
        body = fwd + f"\n    return %o, %lse : {o_type}, {lse_type}"
    else:
        results = [("dq", q.shape, args.dtype, q.type), ("dk", k.shape, args.dtype, k.type),
                   ("dv", v.shape, args.dtype, v.type)]
        grads, grad_sinks_type = "%dq, %dk, %dv", ""
        if "sinks" in ops:
            sinks = ops["sinks"]
            results.append(("dsinks", list(sinks.value.shape), sinks.et, sinks.type))
            grads += ", %dsinks"
            grad_sinks_type = f" -> {sinks.type}"
        body = (fwd + "\n"
                f"    {grads} = flash.attention_backward %q, %k, %v, %o, %do, %lse{opt}"
                f"{attrs_text(args)}\n"
                f"        : {qkv_types}, {o_type}, {lse_type}{grad_sinks_type}{mod}\n"
                f"    return {grads} : " + ", ".join(r[3] for r in results))
    result_types = ", ".join(r[3] for r in results)
    lines = [
        "func.func private @printMemrefI32(tensor<*xi32>)",
        "",
        f"func.func @attention({sig}) -> ({result_types}) {{",
        body,
        "}",
        "",
        "func.func @main() {",
    ]
    for o in params:
        lines += o.constant()
    call_args = ", ".join(o.ssa() for o in params)
    call_types = ", ".join(o.type for o in params)
    if runtime_scale(args):
        scale = args.scale if args.scale is not None else q.shape[-1] ** -0.5
        lines.append(f"    %scale = arith.constant {float_literal(scale)} : f32")
        call_args += ", %scale"
        call_types += ", f32"
    for name, _, value in bounds:
        lines.append(f"    %{name} = arith.constant {value} : {args.max_seqlen_args}")
        call_args += f", %{name}"
        call_types += f", {args.max_seqlen_args}"
    names = ", ".join(f"%{r[0]}" for r in results)
    lines.append(f"    {names} = call @attention({call_args}) : ({call_types}) -> ({result_types})")
    for name, shape, et, dyn_type in results:
        lines += result_printer(name, shape, et, dyn_type)
    lines += ["    return", "}"]
    return "\n".join(lines) + "\n", results


# ----------------------------------------------------------------------------
# Running and parsing
# ----------------------------------------------------------------------------

def parse_outputs(text, results):
    blocks = text.split("Unranked Memref")[1:]
    printed = [r for r in results if 0 not in r[1]]
    if len(blocks) != len(printed):
        raise RuntimeError(f"expected {len(printed)} printed results, got {len(blocks)}:\n{text}")
    values = {name: np.zeros(shape) for name, shape, _, _ in results if 0 in shape}
    for block, (name, shape, _, _) in zip(blocks, printed):
        data = block.split("data =", 1)[1]
        ints = np.array([int(t) for t in re.findall(r"-?\d+", data)], dtype=np.int64)
        if ints.size != int(np.prod(shape)):
            raise RuntimeError(f"{name}: expected {np.prod(shape)} values, got {ints.size}")
        values[name] = ints.astype(np.int32).view(np.float32).reshape(shape).astype(np.float64)
    return values


def run_program(program, passes, keep=None, entry="main"):
    flash_opt = os.environ.get("FLASH_OPT", "flash-opt")
    runner = os.environ.get("MLIR_RUNNER", "mlir-runner")
    libs = os.environ.get(
        "MLIR_RUNNER_LIBS",
        "/usr/lib/llvm-22/lib/libmlir_runner_utils.so,"
        "/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so")
    with tempfile.TemporaryDirectory() as tmp:
        src = keep or os.path.join(tmp, "program.mlir")
        with open(src, "w") as f:
            f.write(program)
        lowered = subprocess.run([flash_opt, src] + shlex.split(passes),
                                 capture_output=True, text=True)
        if lowered.returncode != 0:
            raise RuntimeError(f"flash-opt failed:\n{lowered.stderr}")
        run = subprocess.run([runner, "-e", entry, "-entry-point-result=void",
                              f"-shared-libs={libs}"],
                             input=lowered.stdout, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"mlir-runner failed:\n{run.stderr}")
        return run.stdout


def check_no_score_matrix(program, args):
    """The tiled program must hold no M x N tensor (static sizes only; a bias
    or mask operand may itself be M x N, so those programs are not checked)."""
    if "m" in args.dynamic or "n" in args.dynamic or min(args.m, args.n) <= 1 \
            or args.bias or args.mask:
        return
    flash_opt = os.environ.get("FLASH_OPT", "flash-opt")
    opts = f"block-rows={args.block_rows} block-cols={args.block_cols} target={args.target}"
    tiled = subprocess.run([flash_opt, "-", f"--flash-tile-attention={opts}"],
                           input=program, capture_output=True, text=True)
    if tiled.returncode != 0:
        raise RuntimeError(f"flash-tile-attention failed:\n{tiled.stderr}")
    pattern = re.compile(rf"tensor<(?:\d+x)*({args.m}x{args.n}|{args.n}x{args.m})x")
    body = tiled.stdout.split("func.func @main")[0]
    if pattern.search(body):
        raise RuntimeError(f"the tiled program still holds an {args.m} x {args.n} tensor")


def compare(name, got, want, rtol):
    """Checks got against want elementwise; -inf must match exactly."""
    inf_want = np.isinf(want)
    if not np.array_equal(np.isinf(got), inf_want) or \
            not np.array_equal(got[inf_want], want[inf_want]):
        return False, f"{name}: infinities differ"
    if np.isnan(got).any():
        return False, f"{name}: NaN in output"
    if want.size == 0:
        return True, f"{name}: empty"
    g, w = got[~inf_want], want[~inf_want]
    if g.size == 0:
        return True, f"{name}: all -inf"
    scale = np.abs(w).max()
    err = np.abs(g - w)
    ok = bool(np.all(err <= rtol * (np.abs(w) + scale)))
    rel = err.max() / scale if scale > 0 else err.max()
    return ok, f"{name}: max_abs_err={err.max():.3e} rel_to_max={rel:.3e} tol={rtol:.1e}"


# ----------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------

def parse_shape(text):
    return [int(s) for s in text.split("x")]


def make_inputs(args, rng):
    b, hq, hkv, m, n, d = args.b, args.hq, args.hkv, args.m, args.n, args.d
    dv = d if args.dv is None else args.dv
    lead = {4: [], 3: ["b"], 2: ["b", "h"]}[args.rank]
    if args.rank < 4 and b != 1 or args.rank < 3 and (hq != 1 or hkv != 1):
        raise SystemExit("rank-3 needs --b 1, rank-2 needs --b 1 --hq 1 --hkv 1")
    dyn = set(args.dynamic)

    def drop(shape, letters):
        keep = 4 - args.rank
        return shape[keep:], letters[keep:]

    def operand(name, shape, letters, et):
        full = quantize(rng.standard_normal(shape), et)
        s, l = drop(shape, letters)
        return Operand(name, full.reshape(s), et, l, dyn), full

    ops, full = {}, {}
    for name, shape, letters in [("q", [b, hq, m, d], ["b", "h", "m", None]),
                                 ("k", [b, hkv, n, d], ["b", "h", "n", None]),
                                 ("v", [b, hkv, n, dv], ["b", "h", "n", None])]:
        ops[name], full[name] = operand(name, shape, letters, args.dtype)
    if args.mode == "bwd":
        ops["do"], full["do"] = operand("do", [b, hq, m, dv], ["b", "h", "m", None], args.dtype)
    if args.bias:
        shape = parse_shape(args.bias)
        x = quantize(rng.standard_normal(shape), args.bias_dtype)
        ops["bias"] = Operand("bias", x, args.bias_dtype, [None] * len(shape), dyn)
        full["bias"] = x
    if getattr(args, "alibi", False):
        # FlexAttention's ALiBi slopes 2^(-8 (h + 1) / Hq), stored as f32.
        x = np.exp2(-8.0 * (np.arange(hq) + 1) / hq).astype(np.float32)
        ops["alibi"] = Operand("alibi", x, "f32", [None], dyn)
        full["alibi"] = x
    if getattr(args, "batch_bias", False):
        # score_mod: one shift per batch entry (per sequence with --varlen),
        # read at the region's b: the LSE shows which one a row took.
        count = len(varlen_lengths(args)[0]) if args.varlen is not None else b
        x = quantize(rng.standard_normal(count) * 2.0, "f32")
        ops["batch_bias"] = Operand("batch_bias", x, "f32", [None], dyn)
        full["batch_bias"] = x
    if getattr(args, "sinks", False):
        # One logit per query head, some above every score of their rows.
        x = quantize(rng.standard_normal(hq) * 2.0 + 1.0, args.sinks_dtype)
        ops["sinks"] = Operand("sinks", x, args.sinks_dtype, ["h"], dyn)
        full["sinks"] = x
    if getattr(args, "key_lengths", None):
        # Each sequence's keys: 0, all N, one, then random lengths (edges),
        # or all random.
        x = rng.integers(0, n + 1, size=b)
        if args.key_lengths == "edges":
            edges = [0, n, min(1, n)][:b]
            x[:len(edges)] = edges
        et = getattr(args, "key_lengths_dtype", "i32")
        x = x.astype(np.int32 if et == "i32" else np.int64)
        ops["key_lengths"] = Operand("key_lengths", x, et, ["b"], dyn)
        full["key_lengths"] = x
    if getattr(args, "paged", None):
        make_pages(args, rng, ops, full, dyn)
    if getattr(args, "varlen", None) is not None:
        make_packed(args, rng, ops, full, dyn)
    if args.mask:
        shape = parse_shape(args.mask)
        x = rng.random(shape) < 0.8
        if args.masked_row:
            x[..., 0, :] = False
        ops["mask"] = Operand("mask", x, "i1", [None] * len(shape), dyn)
        full["mask"] = x
    return ops, full


def expected_results(args, full, common):
    """The float64 reference's results by name (o, lse or dq, dk, dv,
    dsinks) for the inputs `full` and the reference options `common`."""
    forward, backward = reference.attention, reference.attention_backward
    if getattr(args, "varlen", None) is not None:
        packed = dict(cu_seqlens_q=full["cu_seqlens_q"], cu_seqlens_k=full["cu_seqlens_k"])
        forward = functools.partial(reference.attention_varlen, **packed)
        backward = functools.partial(reference.attention_backward_varlen, **packed)
    o_ref, lse_ref = forward(full["q"], full["k"], full["v"], **common)
    if args.mode == "fwd":
        return {"o": o_ref, "lse": lse_ref}
    grads = backward(full["q"], full["k"], full["v"], full["do"], o=o_ref, **common)
    return dict(zip(["dq", "dk", "dv", "dsinks"], grads))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", nargs="?",
                   help="an MLIR file whose functions run tiled and naive (the shape "
                        "options are then unused)")
    p.add_argument("--dynamic-size", type=int, default=12,
                   help="with FILE: the value of every dynamic size")
    p.add_argument("--mode", choices=["fwd", "bwd"], default="fwd")
    for dim, default in [("b", 1), ("hq", 2), ("hkv", None), ("m", 8), ("n", None),
                         ("d", 16), ("dv", None)]:
        p.add_argument(f"--{dim}", type=int, default=default)
    p.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="f32")
    p.add_argument("--rank", type=int, choices=[2, 3, 4], default=4)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--scale", type=float)
    p.add_argument("--runtime-scale", action="store_true",
                   help="pass the scale as the op's runtime_scale operand (a "
                        "function argument) instead of an attribute (forward)")
    p.add_argument("--window", type=int, help="sliding window: keys j >= i + N - M - W")
    p.add_argument("--softcap", type=float,
                   help="score_mod: each scaled score s becomes c tanh(s / c)")
    p.add_argument("--alibi", action="store_true",
                   help="score_mod: add slope[h] (j - i), one f32 slope per query head "
                        "read from a tensor argument")
    p.add_argument("--batch-bias", action="store_true",
                   help="score_mod: add batch_bias[b], one f32 per batch entry (per "
                        "sequence with --varlen) read from a tensor argument")
    p.add_argument("--bias", help="bias shape, e.g. 1x4x77x33 or 77x33")
    p.add_argument("--bias-dtype", choices=["f32", "f16", "bf16"], default="f32")
    p.add_argument("--sinks", action="store_true",
                   help="attention sinks: one logit per query head in every row's "
                        "softmax (the backward also returns their gradient)")
    p.add_argument("--sinks-dtype", choices=["f32", "f16", "bf16"], default="f32")
    p.add_argument("--key-lengths", choices=["edges", "random"],
                   help="key_lengths [B]: each sequence's own key count (a ragged "
                        "KV cache); edges: 0, N, 1, then random; random: all random")
    p.add_argument("--key-lengths-dtype", choices=["i32", "i64"], default="i32")
    p.add_argument("--paged", type=int, metavar="PAGE_SIZE",
                   help="with --key-lengths: K and V as pages of PAGE_SIZE keys "
                        "behind a block_table (N a multiple of it)")
    p.add_argument("--varlen", metavar="LENGTHS",
                   help="packed variable-length sequences (cu_seqlens), e.g. "
                        "5,0,17: each sequence's query rows (M and N follow)")
    p.add_argument("--varlen-keys", metavar="LENGTHS",
                   help="with --varlen: each sequence's keys (default: its queries)")
    p.add_argument("--pad-rows", type=int, default=3,
                   help="with --varlen: query and key rows past the last sequence")
    p.add_argument("--varlen-dtype", choices=["i32", "i64"], default="i32")
    p.add_argument("--max-seqlen-args", choices=["index", "i32", "i64"],
                   help="with --varlen: the most query and key rows of a sequence as "
                        "function arguments tagged flash.max_seqlen_q/_k (of this type), "
                        "which the tiling takes instead of computing them")
    p.add_argument("--mask", help="i1 mask shape, broadcastable to [B,Hq,M,N]")
    p.add_argument("--masked-row", action="store_true",
                   help="make query row 0 of the mask fully masked")
    p.add_argument("--dynamic", default="", help="letters of dynamic sizes: b, h, m, n")
    p.add_argument("--passes",
                   help="flash-opt arguments that lower the program to LLVM "
                        "(default: --flash-cpu-pipeline with the options below)")
    p.add_argument("--block-rows", type=int, default=0, help="force Br of the tiling")
    p.add_argument("--block-cols", type=int, default=0, help="force Bc of the tiling")
    p.add_argument("--target", default="cpu",
                   help="tiling target (sm_80/sm_90a: the GPU form, e.g. the backward as "
                        "a dQ nest and a dK/dV nest)")
    p.add_argument("--nondeterministic", action="store_true",
                   help="with a GPU target: the backward with dQ added by atomics "
                        "(FlashAttention-2's form; deterministic=false)")
    p.add_argument("--causal-rows-from-end", action="store_true",
                   help="causal: query blocks aligned to the last row (the "
                        "tiling's causal-rows-from-end)")
    p.add_argument("--overlap-products", action="store_true",
                   help="with --nondeterministic: the dK/dV step builds dPᵀ right "
                        "after Sᵀ (the tiling's overlap-products)")
    p.add_argument("--dq-fragment-major", type=int, default=0, choices=[0, 1, 2, 4],
                   help="with --nondeterministic: the dQ sums in mma.sync fragment "
                        "order (the tiling's dq-fragment-major; D a multiple of 64)")
    p.add_argument("--one-masked-loop", action="store_true",
                   help="with a GPU target: the backward's blocks in one masked "
                        "loop per nest (the tiling's mask-free-blocks=false)")
    p.add_argument("--mask-under-branch", action="store_true",
                   help="with a GPU target: one loop per backward nest, the mask "
                        "applied under a branch on the block index (the tiling's "
                        "mask-under-branch)")
    p.add_argument("--no-tile", action="store_true",
                   help="run flash.attention through the naive decomposition")
    p.add_argument("--outputs",
                   help="compare only these results (comma-separated, e.g. dv): at a huge "
                        "scale dQ and dK are the float64 reference's own rounding times the "
                        "scale, which no f32 program reproduces")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--emit", action="store_true", help="print the program and stop")
    p.add_argument("--keep", help="write the program to this path")
    args = p.parse_args(argv)
    if args.hkv is None:
        args.hkv = args.hq
    if args.passes is None:
        opts = f"block-rows={args.block_rows} block-cols={args.block_cols} target={args.target}"
        if args.no_tile:
            opts += " tile=false"
        if args.nondeterministic:
            opts += " deterministic=false"
        if args.causal_rows_from_end:
            opts += " causal-rows-from-end=true"
        if args.overlap_products:
            opts += " overlap-products=true"
        if args.dq_fragment_major:
            opts += f" dq-fragment-major={args.dq_fragment_major}"
        if args.one_masked_loop:
            opts += " mask-free-blocks=false"
        if args.mask_under_branch:
            opts += " mask-under-branch=true"
        args.passes = f'--flash-cpu-pipeline="{opts}"'
    if args.n is None:
        args.n = args.m
    if args.varlen is not None:
        queries, keys = varlen_lengths(args)
        if args.b != 1 or args.paged or args.bias or args.mask:
            p.error("--varlen packs one batch (--b 1), without --paged, --bias "
                    "or --mask")
        args.m = sum(queries) + args.pad_rows
        args.n = sum(keys) + args.pad_rows
    if args.runtime_scale and args.mode != "fwd":
        p.error("--runtime-scale is for the forward (flash.attention_backward "
                "takes a constant scale)")
    if args.file:
        from flash_mlir.fusion_check import check_chunks  # it imports this module
        failures = check_chunks(args.file, '--flash-cpu-pipeline="tile=false"', args.passes,
                                args.dynamic_size, args.seed)
        print(f"cpu_check: {failures} failure(s)")
        return 1 if failures else 0

    rng = np.random.default_rng(args.seed)
    ops, full = make_inputs(args, rng)
    program, results = build_program(args, ops)
    if args.emit:
        print(program)
        return 0
    scale = args.scale
    common = dict(scale=scale, causal=args.causal, bias=full.get("bias"),
                  mask=full.get("mask"), window=args.window)
    common.update(softcap=args.softcap, alibi=full.get("alibi"),
                  sinks=full.get("sinks"), batch_bias=full.get("batch_bias"))
    if "key_lengths" in full:
        if args.mode != "fwd":
            raise SystemExit("cpu_check: key_lengths has no backward")
        common["key_lengths"] = full["key_lengths"]
    want = expected_results(args, full, common)

    if not args.no_tile:
        check_no_score_matrix(program, args)
    got = parse_outputs(run_program(program, args.passes, args.keep), results)
    all_ok = True
    lines = []
    only = set(args.outputs.split(",")) if args.outputs else None
    for name, shape, et, _ in results:
        if only is not None and name not in only:
            continue
        ok, msg = compare(name, got[name], want[name].reshape(shape),
                          tolerance(name, et, args.dtype))
        all_ok &= ok
        lines.append(msg)
    print(("PASS " if all_ok else "FAIL ") + "; ".join(lines))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
