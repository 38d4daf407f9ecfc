"""A torch.compile backend that finds attention in the graph Dynamo captured
and runs it on flash-mlir's kernels, then hands the graph to Inductor.

    model = torch.compile(model, backend="flash_mlir")   # after importing
    # flash_mlir.compile; or backend=flash_mlir.compile.backend

For every matrix product whose left operand comes, through softmax, casts,
scaling, masked_fill and additions, from another matrix product, the region
between them (and the ones/tril/~ that build a mask inside the graph) is
written as linalg (flash_mlir.region) and the compiler's own matcher
(`flash-opt --flash-fuse-attention`) says whether it is attention and with
which attributes. A fused region is replaced by flash_mlir's attention op
(forward and backward kernels, autograd from the op); a rejected one stays
as it is, and the compiler's reason is in `reports` and on the
"flash_mlir.compile" logger.
"""

import logging
import operator

import torch
import torch.nn.functional as F

from flash_mlir import region as rg

log = logging.getLogger("flash_mlir.compile")
reports = []

_MATMUL = {operator.matmul, torch.matmul, torch.bmm}
_SOFTMAX = {torch.softmax, F.softmax, torch.Tensor.softmax}
_NOT = {operator.invert, torch.logical_not, torch.bitwise_not}
_CONVERT_METHODS = {"to", "type", "float", "half", "bfloat16", "double"}


def _meta(node):
    v = node.meta.get("example_value") if hasattr(node, "meta") else None
    return v if isinstance(v, torch.Tensor) else None


def _example(node):
    return node.meta.get("example_value") if isinstance(node, torch.fx.Node) else None


def _dtype(t):
    return str(t.dtype).replace("torch.", "")


def _shape(t):
    """The shape for the exporter: ints, and torch's symbol expressions
    ("s0", "s0*s1") for dynamic sizes (one symbol, one size)."""
    return tuple(s if isinstance(s, int) else str(s) for s in t.shape)


def _kind(node):
    """(region kind, tensor inputs, attrs) of an FX node, or None."""
    if node.op not in ("call_function", "call_method"):
        return None
    t, args, kw = node.target, node.args, node.kwargs
    name = t if node.op == "call_method" else None
    tensors = [a for a in args if isinstance(a, torch.fx.Node)]
    if t in _MATMUL or name == "matmul":
        return "matmul", tensors[:2], {}
    if t in (operator.truediv, torch.div) or name == "div":
        if len(tensors) == 1 and isinstance(args[1], (int, float)) and args[0] is tensors[0]:
            return "scale", tensors, {"op": "div", "value": float(args[1])}
        return None
    if t in (operator.mul, torch.mul) or name == "mul":
        scalars = [a for a in args if isinstance(a, (int, float))]
        if len(tensors) == 1 and len(scalars) == 1:
            return "scale", tensors, {"op": "mul", "value": float(scalars[0])}
        return None
    if t in (operator.add, torch.add) or name == "add":
        if len(tensors) == 2 and "alpha" not in kw:
            return "add", tensors, {}
        return None
    if t in _SOFTMAX or name == "softmax":
        dim = kw.get("dim", args[1] if len(args) > 1 else None)
        return ("softmax", tensors[:1], {"dim": dim}) if isinstance(dim, int) else None
    if t is torch.masked_fill or name == "masked_fill":
        value = kw.get("value", args[2] if len(args) > 2 else None)
        if len(tensors) == 2 and isinstance(value, (int, float)):
            return "masked_fill", tensors, {"value": float(value)}
        return None
    if t in (torch.transpose,) or name == "transpose":
        if len(args) >= 3 and all(isinstance(a, int) for a in args[1:3]):
            return "transpose", tensors[:1], {"dim0": args[1], "dim1": args[2]}
        return None
    if t in _NOT or name in ("logical_not", "bitwise_not", "__invert__"):
        return "not", tensors[:1], {}
    if t in (torch.tril, torch.triu) or name in ("tril", "triu"):
        diag = kw.get("diagonal", args[1] if len(args) > 1 else 0)
        upper = t is torch.triu or name == "triu"
        if not isinstance(diag, int):
            return None  # a diagonal computed from sizes: not exported
        return "tril", tensors[:1], {"diagonal": diag, "upper": upper}
    if t is torch.ones:
        return "ones", [], {}
    if name in _CONVERT_METHODS:
        return "convert", tensors[:1], {}
    if name in ("view", "reshape", "unsqueeze") or t in (torch.reshape, torch.unsqueeze):
        return "reshape", tensors[:1], {}
    if t is operator.getitem and len(tensors) == 1 and isinstance(args[1], tuple) \
            and all(i is None or i == slice(None) for i in args[1]):
        return "reshape", tensors, {}  # x[:, :, None]: an unsqueeze
    if name in ("expand", "expand_as"):
        return "expand", tensors[:1], {}
    if t is torch.repeat_interleave or name == "repeat_interleave":
        reps = kw.get("repeats", args[1] if len(args) > 1 else None)
        dim = kw.get("dim", args[2] if len(args) > 2 else None)
        if isinstance(reps, int) and isinstance(dim, int):
            return "repeat_interleave", tensors[:1], {"repeats": reps, "dim": dim}
        return None
    if t in (F.dropout, torch.dropout) or name == "dropout":
        p = kw.get("p", args[1] if len(args) > 1 else 0.5)
        training = kw.get("training", args[2] if len(args) > 2 else True)
        return ("identity", tensors[:1], {}) if p == 0 or training is False else None
    if name in ("contiguous", "clone"):
        return "identity", tensors[:1], {}
    return None


_CHAIN = {"convert", "softmax", "masked_fill", "scale", "add", "identity"}
# What may stand between K or V and the products: repeat_kv and its kin.
_OPERAND = {"reshape", "expand", "repeat_interleave", "identity"}
_MASK = {"ones", "tril", "not", "convert"}


class _Candidate:
    """The region between two matrix products of an FX graph."""

    def __init__(self, second):
        self.second = second
        self.nodes = {}      # fx node -> (kind, tensor inputs, attrs)
        self.first = None

    def take(self, node):
        k = _kind(node)
        self.nodes[node] = k
        return k

    def operand_chain(self, node):
        """K's or V's grouped-query repeat (and views) joins the region, so
        that the compiler sees the heads it reads."""
        while True:
            k = _kind(node)
            if k is None or k[0] not in _OPERAND or not k[1] or len(node.users) != 1:
                return
            self.take(node)
            node = k[1][0]

    def collect(self):
        k = self.take(self.second)
        self.operand_chain(k[1][1])
        frontier = [k[1][0]]
        while frontier:
            node = frontier.pop()
            if node in self.nodes:
                continue
            k = _kind(node)
            if k is None and any(isinstance(_example(a), (torch.SymInt, torch.SymFloat))
                                 for a in node.args):
                return (f"{node.name} applies a symbolic size to the scores "
                        "(a dynamic head dim in the scale, as torch.compile"
                        "(dynamic=True) makes every size dynamic, or a size-"
                        "dependent value); the exporter writes constants only "
                        "(mark only batch and sequence dynamic)")
            if k is None:
                what = node.target if node.op != "call_function" else \
                    getattr(node.target, "__name__", node.target)
                return (f"the softmax chain holds {node.op} {what} ({node.name}), "
                        "which the exporter does not write as linalg")
            if k[0] == "matmul":
                self.take(node)
                if self.first is not None and self.first is not node:
                    return "two score products feed the softmax"
                self.first = node
                kt = k[1][1]
                kk = _kind(kt)
                if kk and kk[0] == "transpose" and len(kt.users) == 1:
                    self.take(kt)
                    self.operand_chain(kk[1][0])
                continue
            if k[0] not in _CHAIN:
                return f"the softmax chain holds {k[0]}"
            self.take(node)
            if k[0] == "masked_fill":
                frontier.append(k[1][0])
                self.mask_chain(k[1][1])
            elif k[0] == "add":
                # The side that leads to the scores continues the chain; the
                # other is a region input (a bias).
                lead = [a for a in k[1] if any(
                    (_kind(p) or ("",))[0] == "matmul" for p in _ancestors(a, 8))]
                if len(lead) != 1:
                    return "an addition of two score-like tensors"
                frontier.append(lead[0])
            else:
                frontier.extend(k[1][:1])
        if self.first is None:
            return "no score product before the softmax"
        return None

    def mask_chain(self, node):
        """A mask built in the graph from constants (ones, tril, ~) joins
        the region so the compiler sees its diagonal."""
        k = _kind(node)
        if k is None or k[0] not in _MASK or len(node.users) != 1:
            return
        self.take(node)
        for i in k[1]:
            self.mask_chain(i)

    def inputs(self):
        seen, out = set(), []
        for node in self.order():
            for i in self.nodes[node][1]:
                if i not in self.nodes and i not in seen:
                    seen.add(i)
                    out.append(i)
        return out

    def order(self):
        graph_order = list(self.second.graph.nodes)
        return sorted(self.nodes, key=graph_order.index)

    def escaping(self):
        for node in self.nodes:
            if node is self.second:
                continue
            for user in node.users:
                if user not in self.nodes:
                    return node
        return None

    def region(self):
        nodes = []
        for i, fx in enumerate(self.inputs()):
            t = _meta(fx)
            if t is None:
                raise rg.Unsupported(f"input {fx.name} has no example value")
            nodes.append(rg.Node(fx.name, "input", [], _shape(t), _dtype(t)))
        for fx in self.order():
            kind, ins, attrs = self.nodes[fx]
            t = _meta(fx)
            if t is None:
                raise rg.Unsupported(f"{fx.name} has no example value")
            nodes.append(rg.Node(fx.name, kind, [i.name for i in ins],
                                 _shape(t), _dtype(t), attrs))
        return rg.Region(nodes, self.second.name)


def _attend(q, k, v, bias, mask, causal, scale, window, compute_lse):
    from flash_mlir import torch as fm  # noqa: F401  (registers the op)
    if q.dim() == 3:  # [B*H, S, D] (bmm-style code): one batch of B*H heads
        return _attend(q[None], k[None], v[None], bias, mask, causal, scale,
                       window, compute_lse)[0]
    return torch.ops.flash_mlir.attention_forward(
        q, k, v, bias, mask, causal, scale, window, compute_lse)[0]


def rewrite(gm, compute_lse=True, flash_opt=None):
    """Replaces every attention region of `gm` that the compiler fuses by
    flash_mlir's op; returns this graph's reports."""
    graph = gm.graph
    found = []
    for node in list(graph.nodes):
        k = _kind(node)
        if k is None or k[0] != "matmul" or node.graph is not graph:
            continue
        if not any(_kind(p) and _kind(p)[0] == "softmax"
                   for p in _ancestors(k[1][0], 6)):
            continue  # no softmax on the left: not a candidate
        cand = _Candidate(node)
        report = {"node": node.name, "fused": False}
        reason = cand.collect()
        if reason is None and cand.escaping() is not None:
            reason = (f"{cand.escaping().name} is used outside the attention "
                      "(the probabilities or scores are needed elsewhere)")
        fusion = None
        if reason is None:
            try:
                r = cand.region()
                fusion = rg.ask_compiler(r, flash_opt)
                reason = None if fusion.fused else fusion.reason
            except rg.Unsupported as e:
                reason = f"not exported: {e}"
        if reason is None:
            ins = cand.inputs()
            q, kk, v = (ins[i] for i in (fusion.query, fusion.key, fusion.value))
            rank = len(_meta(q).shape)
            if rank not in (3, 4) or any(len(_meta(t).shape) != rank
                                         for t in (q, kk, v)):
                reason = "Q, K, V are neither [B, H, S, D] nor [B*H, S, D]"
            elif _shape(_meta(node)) != _shape(_meta(q))[:-1] + \
                    _shape(_meta(v))[-1:]:
                reason = "the result is not laid out as [.., M, Dv]"
        if reason is not None:
            report["reason"] = reason
            log.info("flash_mlir: attention at %s not fused: %s", node.name, reason)
            found.append(report)
            continue
        bias = ins[fusion.bias] if fusion.bias is not None else None
        mask = ins[fusion.mask] if fusion.mask is not None else None
        scale = fusion.scale if fusion.scale is not None else \
            _meta(q).shape[-1] ** -0.5
        with graph.inserting_before(node):
            new = graph.call_function(_attend, (q, kk, v, bias, mask,
                                                fusion.causal, scale,
                                                fusion.window, compute_lse))
        new.meta["example_value"] = _meta(node)
        node.replace_all_uses_with(new)
        report.update(fused=True, causal=fusion.causal, scale=scale,
                      window=fusion.window, bias=bias is not None,
                      mask=mask is not None,
                      region=[n.name for n in cand.order()])
        log.info("flash_mlir: attention at %s fused (causal=%s, scale=%g)",
                 node.name, fusion.causal, scale)
        found.append(report)
    graph.eliminate_dead_code()
    gm.recompile()
    reports.extend(found)
    return found


def _ancestors(node, depth):
    out, frontier = [], [node]
    for _ in range(depth):
        nxt = []
        for n in frontier:
            if isinstance(n, torch.fx.Node):
                out.append(n)
                nxt.extend(a for a in n.args if isinstance(a, torch.fx.Node))
        frontier = nxt
    return out


def backend(gm, example_inputs, **kwargs):
    """torch.compile backend: rewrite, then Inductor."""
    from torch._inductor.compile_fx import compile_fx
    # Under grad mode the forward keeps its LSE for the backward.
    rewrite(gm, compute_lse=torch.is_grad_enabled())
    return compile_fx(gm, example_inputs, **kwargs)


try:
    from torch._dynamo import register_backend
    register_backend(name="flash_mlir")(backend)
except Exception:  # noqa: BLE001  (already registered, or an old torch)
    pass
