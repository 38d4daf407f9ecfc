"""Candidate attention regions as linalg, and what the compiler says of them
(no torch here: CI tests this module).

A `Region` is a small dataflow graph of tensor ops as a PyTorch program
writes them (matmul, transpose, scaling, masked_fill, softmax, casts, the
ones/tril of a causal mask, ...). `Region.to_mlir()` writes it as one
function of linalg ops, one op per node, in torch's semantics (a bf16
matmul accumulates in f32 and rounds its result). `ask_compiler` runs
`flash-opt --flash-fuse-attention=report=true` on it: the compiler's own
matcher decides whether the region is attention and with which attributes;
`parse_fusion` reads its answer back as a `Fusion` (which region inputs are
Q, K, V, bias and mask, causal, scale, window) or the reason it gave.

Answers are cached by the region's text ($FLASH_MLIR_MATCH_CACHE or
~/.cache/flash-mlir/matches), so a machine without flash-opt can use answers
made elsewhere: `python -m flash_mlir.region DIR` answers every region file
that a run left in DIR/pending.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from flash_mlir.kernels import find_tool

ELEMENT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32",
           "float64": "f64", "bool": "i1"}
NEG_INF = {"f16": "0xFC00", "bf16": "0xFF80", "f32": "0xFF800000",
           "f64": "0xFFF0000000000000"}


class Unsupported(Exception):
    """The region holds something the exporter does not write as linalg."""


@dataclass
class Node:
    name: str
    kind: str            # input, matmul, transpose, scale, add, masked_fill,
    #                      softmax, convert, ones, tril, not, reshape, expand,
    #                      repeat_interleave, identity
    inputs: List[str]
    shape: Tuple          # ints, and dynamic sizes as symbolic products
    #                      ("s0", "s0*s1", "4*s2"), as torch prints SymInts
    dtype: str           # torch dtype name (float16, bfloat16, float32, bool)
    attrs: Dict = field(default_factory=dict)


@dataclass
class Region:
    nodes: List[Node]    # in dataflow order; inputs first
    output: str

    def inputs(self):
        return [n for n in self.nodes if n.kind == "input"]

    def to_mlir(self) -> str:
        return _Writer(self).write()

    def key(self) -> str:
        return hashlib.sha256(self.to_mlir().encode()).hexdigest()[:24]


def _ty(shape, dtype):
    et = ELEMENT.get(dtype)
    if et is None:
        raise Unsupported(f"element type {dtype}")
    for s in shape:
        if isinstance(s, int):
            if s < 0:
                raise Unsupported(f"size {s}")
        else:
            _factors(s)
    return "tensor<" + "".join(f"{s if isinstance(s, int) else '?'}x"
                               for s in shape) + et + ">"


def _factors(size):
    """A size as (constant, sorted symbols) of its product: 6 -> (6, ()),
    "2*s0*s1" -> (2, ("s0", "s1")). Sums and other expressions of dynamic
    sizes are not exported."""
    if isinstance(size, int):
        return size, ()
    const, syms = 1, []
    for f in str(size).replace(" ", "").split("*"):
        if f.isdigit():
            const *= int(f)
        elif f.isidentifier():
            syms.append(f)
        else:
            raise Unsupported(f"dynamic size {size}")
    return const, tuple(sorted(syms))


def _product(sizes):
    const, syms = 1, []
    for s in sizes:
        c, f = _factors(s)
        const *= c
        syms += f
    return const, tuple(sorted(syms))


def _sizes_attr(shape):
    """flash.sizes for an argument with dynamic sizes: the symbols say
    which dynamic sizes are equal (tensor types cannot)."""
    if all(isinstance(s, int) for s in shape):
        return ""
    entries = ", ".join(str(s) if isinstance(s, int) else
                        '"' + str(s).replace(" ", "") + '"' for s in shape)
    return f" {{flash.sizes = [{entries}]}}"


def _dims(n):
    return ", ".join(f"d{i}" for i in range(n))


def _broadcast_map(shape, out):
    """Right-aligned broadcast of `shape` into the iteration space `out`."""
    rank = len(out)
    pad = rank - len(shape)
    exprs = ["0" if s == 1 and out[pad + i] != 1 else f"d{pad + i}"
             for i, s in enumerate(shape)]
    return f"affine_map<({_dims(rank)}) -> ({', '.join(exprs)})>"


class _Writer:
    def __init__(self, region):
        self.region = region
        self.lines = []
        self.count = 0
        self.values = {}
        self.sizes = {}      # _factors(size) -> index value

    def fresh(self, hint="v"):
        self.count += 1
        return f"%{hint}{self.count}"

    def emit(self, text):
        self.lines.append("  " + text)

    def empty(self, shape, dtype):
        sizes = ", ".join(self.size(s) for s in shape if not isinstance(s, int))
        v = self.fresh("e")
        self.emit(f"{v} = tensor.empty({sizes}) : {_ty(shape, dtype)}")
        return v

    def size(self, size):
        """The index value of a dynamic size: tensor.dim of the first input
        that has it, or the product of such dims."""
        const, syms = _factors(size)
        key = (const, syms)
        if key in self.sizes:
            return self.sizes[key]
        if len(syms) == 1 and const == 1:
            raise Unsupported(f"dynamic size {size} is no size of an input")
        factors = [self.size(f) for f in syms]
        if const != 1:
            c = self.fresh("c")
            self.emit(f"{c} = arith.constant {const} : index")
            factors.append(c)
        value = factors[0]
        for f in factors[1:]:
            v = self.fresh("d")
            self.emit(f"{v} = arith.muli {value}, {f} : index")
            value = v
        self.sizes[key] = value
        return value

    def input_sizes(self, value, shape, dtype):
        for i, s in enumerate(shape):
            if isinstance(s, int) or _factors(s) in self.sizes:
                continue
            c = self.fresh("c")
            d = self.fresh("d")
            self.emit(f"{c} = arith.constant {i} : index")
            self.emit(f"{d} = tensor.dim {value}, {c} : {_ty(shape, dtype)}")
            self.sizes[_factors(s)] = d

    def const(self, value, et):
        v = self.fresh("c")
        if et == "i1":
            self.emit(f"{v} = arith.constant {'true' if value else 'false'}")
        elif value == float("-inf"):
            self.emit(f"{v} = arith.constant {NEG_INF[et]} : {et}")
        else:
            self.emit(f"{v} = arith.constant {float(value)!r} : {et}")
        return v

    def elementwise(self, node, operands, body):
        """A linalg.generic over node.shape reading `operands` (value,
        shape, dtype) broadcast; `body(args) -> (lines, result)` writes the
        scalar computation."""
        rank = len(node.shape)
        out_et = ELEMENT[node.dtype]
        maps = [_broadcast_map(s, node.shape) for _, s, _ in operands]
        maps.append(_broadcast_map(node.shape, node.shape))
        init = self.empty(node.shape, node.dtype)
        res = self.fresh()
        ins = ", ".join(v for v, _, _ in operands)
        types = ", ".join(_ty(s, d) for _, s, d in operands)
        args = [f"%a{i}" for i in range(len(operands))]
        block = ", ".join(f"{a}: {ELEMENT[d]}" for a, (_, _, d) in zip(args, operands))
        lines, result = body(args)
        iters = ", ".join(['"parallel"'] * rank)
        self.emit(f"{res} = linalg.generic {{indexing_maps = [{', '.join(maps)}], "
                  f"iterator_types = [{iters}]}} ins({ins} : {types}) "
                  f"outs({init} : {_ty(node.shape, node.dtype)}) {{")
        self.emit(f"^bb0({block}, %out: {out_et}):")
        for line in lines:
            self.emit("  " + line)
        self.emit(f"  linalg.yield {result} : {out_et}")
        self.emit(f"}} -> {_ty(node.shape, node.dtype)}")
        return res

    def operand(self, name):
        node = self.node(name)
        return self.values[name], node.shape, node.dtype

    def node(self, name):
        return self.by_name[name]

    def write(self):
        self.by_name = {n.name: n for n in self.region.nodes}
        args = []
        for i, n in enumerate(self.region.inputs()):
            self.values[n.name] = f"%arg{i}"
            args.append(f"%arg{i}: {_ty(n.shape, n.dtype)}{_sizes_attr(n.shape)}")
        for n in self.region.inputs():
            self.input_sizes(self.values[n.name], n.shape, n.dtype)
        for n in self.region.nodes:
            if n.kind != "input":
                self.values[n.name] = getattr(self, "w_" + n.kind, self.unknown)(n)
        out = self.node(self.region.output)
        rtype = _ty(out.shape, out.dtype)
        head = f"func.func @region({', '.join(args)}) -> {rtype} {{"
        tail = [f"  return {self.values[out.name]} : {rtype}", "}"]
        return "\n".join([head] + self.lines + tail) + "\n"

    def unknown(self, n):
        raise Unsupported(f"op {n.kind}")

    def w_matmul(self, n):
        (a, sa, da), (b, sb, db) = self.operand(n.inputs[0]), self.operand(n.inputs[1])
        if len(sa) < 2 or len(sb) < 2 or da != db:
            raise Unsupported("matmul operands")
        rank = len(n.shape)
        loops = rank + 1  # the output dims and the reduction
        acc = "f32" if ELEMENT[da] in ("f16", "bf16", "f32") else ELEMENT[da]

        def amap(shape, role):
            pad = rank - len(shape)
            exprs = []
            for i, s in enumerate(shape):
                d = pad + i
                if d == rank - 2:
                    exprs.append(f"d{rank - 2}" if role == "a" else f"d{rank}")
                elif d == rank - 1:
                    exprs.append(f"d{rank}" if role == "a" else f"d{rank - 1}")
                else:
                    exprs.append("0" if s == 1 and n.shape[d] != 1 else f"d{d}")
            return f"affine_map<({_dims(loops)}) -> ({', '.join(exprs)})>"

        omap = f"affine_map<({_dims(loops)}) -> ({_dims(rank)})>"
        # The product accumulates in f32 and is rounded once to the
        # result type, as torch computes half-precision matmuls.
        zero = self.const(0.0, acc)
        init = self.empty(n.shape, "float32")
        fill = self.fresh()
        self.emit(f"{fill} = linalg.fill ins({zero} : {acc}) outs({init} : "
                  f"{_ty(n.shape, 'float32')}) -> {_ty(n.shape, 'float32')}")
        res = self.fresh()
        iters = ", ".join(['"parallel"'] * rank + ['"reduction"'])
        et = ELEMENT[da]
        ext = et != acc
        self.emit(f"{res} = linalg.generic {{indexing_maps = [{amap(sa, 'a')}, "
                  f"{amap(sb, 'b')}, {omap}], iterator_types = [{iters}]}} "
                  f"ins({a}, {b} : {_ty(sa, da)}, {_ty(sb, db)}) outs({fill} : "
                  f"{_ty(n.shape, 'float32')}) {{")
        self.emit(f"^bb0(%x: {et}, %y: {et}, %acc: {acc}):")
        x, y = "%x", "%y"
        if ext:
            self.emit(f"  %xf = arith.extf %x : {et} to {acc}")
            self.emit(f"  %yf = arith.extf %y : {et} to {acc}")
            x, y = "%xf", "%yf"
        self.emit(f"  %p = arith.mulf {x}, {y} : {acc}")
        self.emit(f"  %s = arith.addf %acc, %p : {acc}")
        self.emit(f"  linalg.yield %s : {acc}")
        self.emit(f"}} -> {_ty(n.shape, 'float32')}")
        if n.dtype == "float32":
            return res
        return self.convert_value(res, n.shape, "float32", n)

    def convert_value(self, value, shape, dtype, n):
        src, dst = ELEMENT[dtype], ELEMENT[n.dtype]

        def body(args):
            if src == dst:
                return [], args[0]
            op = "arith.extf" if _width(dst) > _width(src) else "arith.truncf"
            return [f"%r = {op} {args[0]} : {src} to {dst}"], "%r"

        return self.elementwise(n, [(value, shape, dtype)], body)

    def w_convert(self, n):
        v, s, d = self.operand(n.inputs[0])
        if ELEMENT[d] == "i1" or ELEMENT[n.dtype] == "i1":
            raise Unsupported("conversion to or from bool")
        return self.convert_value(v, s, d, n)

    def w_identity(self, n):
        # dropout with p = 0, contiguous(), clone(): the value itself.
        return self.values[n.inputs[0]]

    def w_reshape(self, n):
        """A view that merges or splits dims (view, reshape, unsqueeze):
        tensor.collapse_shape or tensor.expand_shape."""
        v, s, d = self.operand(n.inputs[0])
        if tuple(s) == tuple(n.shape):
            return v
        res = self.fresh()
        if len(n.shape) > len(s):
            groups = _groups(n.shape, s)
            out = ", ".join(str(x) if isinstance(x, int) else self.size(x)
                            for x in n.shape)
            self.emit(f"{res} = tensor.expand_shape {v} {groups} output_shape "
                      f"[{out}] : {_ty(s, d)} into {_ty(n.shape, n.dtype)}")
        else:
            groups = _groups(s, n.shape)
            self.emit(f"{res} = tensor.collapse_shape {v} {groups} : "
                      f"{_ty(s, d)} into {_ty(n.shape, n.dtype)}")
        return res

    def w_expand(self, n):
        x = self.operand(n.inputs[0])
        return self.elementwise(n, [x], lambda a: ([], a[0]))

    def w_repeat_interleave(self, n):
        """repeat_interleave(x, r, dim): x [.., H, ..] -> [.., H * r, ..] with
        row h * r + i = x[h], written as repeat_kv writes it: expand_shape to
        [.., H, 1, ..], broadcast to r, collapse_shape."""
        v, s, d = self.operand(n.inputs[0])
        dim, reps = n.attrs["dim"] % len(s), n.attrs["repeats"]
        one = tuple(s[:dim + 1]) + (1,) + tuple(s[dim + 1:])
        wide = tuple(s[:dim + 1]) + (reps,) + tuple(s[dim + 1:])
        u = self.w_reshape(Node(n.name + "_1", "reshape", [n.inputs[0]], one, d))
        self.values[n.name + "_1"] = u
        self.by_name[n.name + "_1"] = Node(n.name + "_1", "reshape", [], one, d)
        b = self.w_expand(Node(n.name + "_r", "expand", [n.name + "_1"], wide, d))
        self.values[n.name + "_r"] = b
        self.by_name[n.name + "_r"] = Node(n.name + "_r", "expand", [], wide, d)
        return self.w_reshape(Node(n.name, "reshape", [n.name + "_r"], n.shape, d))

    def w_transpose(self, n):
        v, s, d = self.operand(n.inputs[0])
        perm = list(range(len(s)))
        a, b = (x % len(s) for x in (n.attrs["dim0"], n.attrs["dim1"]))
        perm[a], perm[b] = perm[b], perm[a]
        init = self.empty(n.shape, n.dtype)
        res = self.fresh()
        self.emit(f"{res} = linalg.transpose ins({v} : {_ty(s, d)}) outs({init} : "
                  f"{_ty(n.shape, n.dtype)}) permutation = {perm}")
        return res

    @staticmethod
    def in_f32(args, types, result_et, compute):
        """A body that widens `args` (element types `types`) to f32, applies
        `compute(f32 values) -> (lines, value)`, and rounds the value to
        `result_et`: torch's arithmetic on half types."""
        lines, xs = [], []
        for a, et in zip(args, types):
            if et != "f32":
                lines.append(f"{a}f = arith.extf {a} : {et} to f32")
                a += "f"
            xs.append(a)
        more, r = compute(xs)
        lines += more
        if result_et != "f32":
            lines.append(f"%t = arith.truncf {r} : f32 to {result_et}")
            r = "%t"
        return lines, r

    def w_scale(self, n):
        """x * c or x / c (attrs: value, op)."""
        v, s, d = self.operand(n.inputs[0])
        c = self.const(float(n.attrs["value"]), "f32")
        op = "arith.divf" if n.attrs["op"] == "div" else "arith.mulf"
        return self.elementwise(n, [(v, s, d)], lambda a: self.in_f32(
            a, [ELEMENT[d]], ELEMENT[n.dtype],
            lambda x: ([f"%r = {op} {x[0]}, {c} : f32"], "%r")))

    def w_add(self, n):
        ops = [self.operand(i) for i in n.inputs]
        return self.elementwise(n, ops, lambda a: self.in_f32(
            a, [ELEMENT[d] for _, _, d in ops], ELEMENT[n.dtype],
            lambda x: ([f"%r = arith.addf {x[0]}, {x[1]} : f32"], "%r")))

    def w_masked_fill(self, n):
        x, m = self.operand(n.inputs[0]), self.operand(n.inputs[1])
        et = ELEMENT[n.dtype]
        fill = self.const(n.attrs["value"], et)
        return self.elementwise(n, [x, m], lambda a: (
            [f"%r = arith.select {a[1]}, {fill}, {a[0]} : {et}"], "%r"))

    def w_not(self, n):
        x = self.operand(n.inputs[0])
        true = self.const(True, "i1")
        return self.elementwise(n, [x], lambda a: (
            [f"%r = arith.xori {a[0]}, {true} : i1"], "%r"))

    def w_ones(self, n):
        et = ELEMENT[n.dtype]
        one = self.const(True if et == "i1" else 1.0, et)
        init = self.empty(n.shape, n.dtype)
        res = self.fresh()
        self.emit(f"{res} = linalg.fill ins({one} : {et}) outs({init} : "
                  f"{_ty(n.shape, n.dtype)}) -> {_ty(n.shape, n.dtype)}")
        return res

    def w_tril(self, n):
        """Keeps x[..., i, j] where j <= i + diagonal (triu: j >= i +
        diagonal), zero (false) elsewhere."""
        x = self.operand(n.inputs[0])
        rank = len(n.shape)
        et = ELEMENT[n.dtype]
        zero = self.const(False if et == "i1" else 0.0, et)
        diag = int(n.attrs.get("diagonal", 0))
        pred = "sge" if n.attrs.get("upper") else "sle"

        def body(a):
            return ([f"%i = linalg.index {rank - 2} : index",
                     f"%j = linalg.index {rank - 1} : index",
                     f"%dg = arith.constant {diag} : index",
                     "%last = arith.addi %i, %dg : index",
                     f"%keep = arith.cmpi {pred}, %j, %last : index",
                     f"%r = arith.select %keep, {a[0]}, {zero} : {et}"], "%r")

        return self.elementwise(n, [x], body)

    def w_softmax(self, n):
        v, s, d = self.operand(n.inputs[0])
        if n.dtype != d:  # softmax(x, dtype=...) converts first
            v = self.convert_value(v, s, d, Node(n.name + "_in", "convert", [],
                                                 s, n.dtype))
        dim = n.attrs["dim"] % len(s)
        init = self.empty(n.shape, n.dtype)
        res = self.fresh()
        t = _ty(n.shape, n.dtype)
        self.emit(f"{res} = linalg.softmax dimension({dim}) ins({v} : {t}) "
                  f"outs({init} : {t}) -> {t}")
        return res


def _groups(fine, coarse):
    """The reassociation that collapses shape `fine` into `coarse` (unit
    dims join the group before them)."""
    groups, j = [], 0
    for c in coarse:
        if j >= len(fine):
            raise Unsupported(f"reshape {list(fine)} -> {list(coarse)}")
        group, want = [j], _factors(c)
        j += 1
        while _product(fine[k] for k in group) != want and j < len(fine):
            group.append(j)
            j += 1
        if _product(fine[k] for k in group) != want:
            raise Unsupported(f"reshape {list(fine)} -> {list(coarse)}")
        # Surplus unit dims join this group (as repeat_kv's [B, Hkv, 1, ..]).
        while j < len(fine) and fine[j] == 1 and \
                len(fine) - j > len(coarse) - len(groups) - 1:
            group.append(j)
            j += 1
        groups.append(group)
    while j < len(fine):
        if fine[j] != 1 or not groups:
            raise Unsupported(f"reshape {list(fine)} -> {list(coarse)}")
        groups[-1].append(j)
        j += 1
    return groups


def _width(et):
    return {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[et]


@dataclass
class Fusion:
    """The compiler's answer for a region."""
    fused: bool
    reason: str = ""
    query: Optional[int] = None     # region input positions
    key: Optional[int] = None
    value: Optional[int] = None
    bias: Optional[int] = None
    mask: Optional[int] = None
    causal: bool = False
    scale: Optional[float] = None
    window: Optional[int] = None


_ATTENTION = re.compile(
    r"= flash\.attention %arg(\d+), %arg(\d+), %arg(\d+)"
    r"(?: bias\(%arg(\d+) : [^)]*\))?(?: mask\(%arg(\d+) : [^)]*\))?"
    r"(?: \{([^}]*)\})? :")


def parse_fusion(text: str, remarks: str) -> Fusion:
    """Reads flash-opt's output. Fused only if the function is now one
    flash.attention on the region's own inputs whose result is returned."""
    body = [ln.strip() for ln in text.splitlines()
            if ln.strip() and not ln.strip().startswith(("module", "func.func", "}", "#"))]
    body = _rank3_as_inputs(body)
    att = [ln for ln in body if "flash.attention" in ln]
    if not att:
        reasons = re.findall(r"remark: not fused: (.*)", remarks)
        return Fusion(False, reasons[0] if reasons else "no attention found")
    m = _ATTENTION.search(att[0])
    if len(att) != 1 or not m:
        return Fusion(False, "the fused attention reads values computed in "
                             "the region, not its inputs")
    # Constants and the sizes of the region's inputs (dynamic views of
    # rank-3 operands) are no computation beside the op.
    others = [ln for ln in body if ln not in att and not ln.startswith("return")
              and not re.match(r"%\S+ = arith\.constant", ln)
              and not re.match(r"%\S+ = tensor\.dim %arg\d+, ", ln)]
    if others:
        return Fusion(False, "the region keeps other ops beside the fused "
                             f"attention ({others[0].split('=')[-1].split()[0]})")
    attrs = m.group(6) or ""
    scale = re.search(r"scale = ([-+0-9.eE]+) : f32", attrs)
    window = re.search(r"window = (\d+) : i64", attrs)
    pos = [int(g) if g is not None else None for g in m.groups()[:5]]
    return Fusion(True, "", pos[0], pos[1], pos[2], pos[3], pos[4],
                  "causal" in attrs.split(", ") or attrs.startswith("causal"),
                  float(scale.group(1)) if scale else None,
                  int(window.group(1)) if window else None)


_LIFT = re.compile(r"(%[\w.]+) = tensor\.expand_shape (%arg\d+) \[\[0, 1\],"
                   r"[^\]]*\](?:, \[\d+\])*\] output_shape \[1,")
_DROP = re.compile(r"(%[\w.]+) = tensor\.collapse_shape (%[\w.]+) \[\[0, 1\],")


def _rank3_as_inputs(body):
    """flash.attention on rank-3 [B*H, S, D] operands canonicalizes to the
    rank-4 op on [1, B*H, S, D] views (expand_shape of the inputs,
    collapse_shape of the result): read it as the op on the inputs."""
    lifted = {m.group(1): m.group(2) for m in map(_LIFT.match, body) if m}
    if not lifted:
        return body
    out, renamed, results = [], {}, set()
    for ln in body:
        if _LIFT.match(ln):
            continue
        m = _DROP.match(ln)
        if m and m.group(2) in results:
            renamed[m.group(1)] = m.group(2)
            continue
        if " = flash.attention " in ln:
            results.update(re.findall(r"%[\w.]+", ln.split(" = flash.attention ")[0]))
        for view, arg in lifted.items():
            ln = re.sub(re.escape(view) + r"\b", arg, ln)
        for view, value in renamed.items():
            ln = re.sub(re.escape(view) + r"\b", value, ln)
        out.append(ln)
    return out


def find_flash_opt():
    """flash-opt: $FLASH_OPT, PATH, or this checkout's build."""
    return find_tool("flash-opt", "FLASH_OPT")


def cache_dir():
    return os.environ.get("FLASH_MLIR_MATCH_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "flash-mlir", "matches")


def run_flash_opt(text, flash_opt):
    # After the fusion, the casts around the fused op's result (f32 for the
    # contraction it replaced, rounded back by the region) fold away.
    run = subprocess.run([flash_opt, "-", "--flash-fuse-attention=report=true",
                          "--linalg-fuse-elementwise-ops", "--canonicalize"],
                         input=text, text=True, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    if run.returncode != 0:
        return {"stdout": "", "stderr": run.stderr, "error": True}
    return {"stdout": run.stdout, "stderr": run.stderr, "error": False}


def ask_compiler(region: Region, flash_opt=None, directory=None) -> Fusion:
    """The compiler's answer for `region`: from the cache, else from
    flash-opt (found if None; none if False), cached, else a Fusion(False)
    saying how to get it; the
    region's MLIR is then left in <cache>/pending for `python -m
    flash_mlir.region`."""
    directory = directory or cache_dir()
    text = region.to_mlir()
    key = hashlib.sha256(text.encode()).hexdigest()[:24]
    path = os.path.join(directory, key + ".json")
    if os.path.exists(path):
        with open(path) as f:
            answer = json.load(f)
    else:
        if flash_opt is None:
            flash_opt = find_flash_opt()
        if not flash_opt:
            pending = os.path.join(directory, "pending")
            os.makedirs(pending, exist_ok=True)
            with open(os.path.join(pending, key + ".mlir"), "w") as f:
                f.write(text)
            return Fusion(False, f"flash-opt is not installed here; the region "
                                 f"is in {pending}/{key}.mlir: run python -m "
                                 f"flash_mlir.region {directory} where flash-mlir "
                                 "is built and bring the answers back")
        answer = run_flash_opt(text, flash_opt)
        _store(directory, key, answer)
    if answer["error"]:
        return Fusion(False, "flash-opt rejected the exported region: "
                             + answer["stderr"].strip().splitlines()[0])
    return parse_fusion(answer["stdout"], answer["stderr"])


def _store(directory, key, answer):
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, key + ".json.tmp")
    with open(tmp, "w") as f:
        json.dump(answer, f)
    os.replace(tmp, os.path.join(directory, key + ".json"))


def answer_pending(directory, flash_opt):
    """Answers every region file in DIR/pending into DIR."""
    pending = os.path.join(directory, "pending")
    done = 0
    for name in sorted(os.listdir(pending)) if os.path.isdir(pending) else []:
        if not name.endswith(".mlir"):
            continue
        with open(os.path.join(pending, name)) as f:
            text = f.read()
        _store(directory, name[:-5], run_flash_opt(text, flash_opt))
        os.remove(os.path.join(pending, name))
        done += 1
    return done


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(
        prog="python -m flash_mlir.region",
        description="Answer the attention regions a run left in DIR/pending "
                    "with flash-opt, into DIR (the match cache).")
    ap.add_argument("directory", nargs="?", default=None)
    ap.add_argument("--flash-opt", default=None)
    args = ap.parse_args(argv)
    flash_opt = args.flash_opt or find_flash_opt()
    if not flash_opt:
        print("error: flash-opt not found (set FLASH_OPT)", file=sys.stderr)
        return 1
    directory = args.directory or cache_dir()
    print(f"{answer_pending(directory, flash_opt)} region(s) answered in {directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
