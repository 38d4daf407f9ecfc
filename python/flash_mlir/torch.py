"""flash-mlir's attention as a PyTorch op.

    from flash_mlir.torch import attention
    o = attention(q, k, v, causal=True)              # [B, H, S, D], any strides
    o, lse = attention(q, k, v, return_lse=True)     # natural-log LSE [B, H, M]

The semantics are `flash.attention`'s: Q [B, Hq, M, D], K [B, Hkv, N, D],
V [B, Hkv, N, Dv] with Hq % Hkv == 0 (GQA/MQA), `scale` default 1/sqrt(D),
`causal` aligned bottom-right when M != N, `window=W` hides keys more than W
before the diagonal (FlashAttention-2's window_size (W, 0) with causal,
(W, -1) without), an additive `bias` and a boolean `mask` (True keeps)
broadcastable to [B, Hq, M, N], and `sinks` [Hq] (attention sinks, as in
gpt-oss: one learned logit per query head that joins every row's softmax
denominator; differentiable), and `softcap` c (Gemma 2's and Grok's
softcapping: each scaled score s becomes c tanh(s / c), forward and
backward). A fully masked row gives O = 0 and LSE = -inf
(LSE = the sink with sinks). The bias receives no gradient; LSE is an output
only (not differentiable, as in FlashAttention).

The op is `torch.ops.flash_mlir.attention_forward` / `attention_backward`
(torch.library custom ops with fake kernels and autograd), so
torch.compile(fullgraph=True) traces it without graph breaks. Every call is
checked before anything is launched (flash_mlir.validate): a wrong device,
dtype, rank or shape is a TypeError or ValueError naming the tensor.

Kernels come from flash_mlir.kernels.KernelCache (prebuilt, cached or
compiled on demand by flash-compile) and are loaded once per device.
"""

import dataclasses
import functools
import math
from collections import Counter
from typing import Optional, Tuple

import torch

from flash_mlir import validate
from flash_mlir.kernels import (KernelCache, KernelNotFound, Variant,
                                backward_variant)
from flash_mlir.runtime import Kernel, tensor_info

Tensor = torch.Tensor

# Launches per kernel name, for tests and profiles: which kernels ran.
launches = Counter()

_caches = {}
_loaded = {}


@functools.lru_cache(maxsize=None)
def chip_of(device) -> str:
    """The compiler's target for a CUDA device: sm_90a on Hopper (compute
    capability 9.0), sm_80 code for other GPUs of capability 8.0 or newer."""
    major, minor = torch.cuda.get_device_capability(device)
    if (major, minor) == (9, 0):
        return "sm_90a"
    if major >= 8:
        return "sm_80"
    raise ValueError(f"{torch.cuda.get_device_name(device)} (compute "
                     f"capability {major}.{minor}) is not supported: the "
                     "kernels need 8.0 or newer")


def cache_for(chip) -> KernelCache:
    if chip not in _caches:
        _caches[chip] = KernelCache(chip)
    return _caches[chip]


def _device_index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def kernel_for(variant: Variant, kind: str, device: torch.device) -> Kernel:
    index = _device_index(device)
    key = (variant, kind, index)
    if key not in _loaded:
        path = cache_for(chip_of(index)).manifest(variant, kind)
        with torch.cuda.device(index):
            _loaded[key] = Kernel.load(path, index)
    return _loaded[key]


def _info(name, t, fake=False):
    if t is None:
        return None
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    return tensor_info(name, t, fake)


def _effective_window(window, keys):
    # A window of N - 1 or more hides nothing: no window (one kernel fewer,
    # and no index arithmetic near the integer limits).
    if window is not None and window >= max(keys - 1, 0):
        return None
    return window


def _check_forward(q, k, v, bias, mask, scale, window, fake=False,
                   sinks=None):
    return validate.check_attention(
        _info("q", q, fake), _info("k", k, fake), _info("v", v, fake),
        _info("bias", bias, fake), _info("mask", mask, fake), scale, window,
        sinks=_info("sinks", sinks, fake))


def _variant(shape, q_dtype, bias, mask, causal, scale, window, sinks=False,
             softcap=None):
    return Variant.of(str(q_dtype).replace("torch.", ""), shape.head_dim,
                      shape.value_dim, causal,
                      _effective_window(window, shape.keys), scale,
                      None if bias is None else str(bias.dtype).replace("torch.", ""),
                      mask is not None, sinks, softcap=softcap)


def _score_operands(shape, bias, mask):
    """bias and mask as rank-4 [B, Hq, M, N] views (stride 0 where they
    broadcast): one kernel operand form for every broadcast shape."""
    target = shape.score_shape()
    out = {}
    if bias is not None:
        out["bias"] = bias.expand(target)
    if mask is not None:
        out["mask"] = mask.expand(target)
    return out


def _launch(variant, kind, device, tensors, scalars=None):
    # The tensors are checked (by run_forward / run_backward): no second
    # check against the manifest.
    kern = kernel_for(variant, kind, device)
    if device.index is None or device.index == torch.cuda.current_device():
        workspaces = kern.launch(tensors, scalars=scalars)
    else:
        with torch.cuda.device(device):
            workspaces = kern.launch(tensors, scalars=scalars)
    launches[kern.name] += 1
    return workspaces


@functools.lru_cache(maxsize=None)
def _sm_count(device):
    return torch.cuda.get_device_properties(device).multi_processor_count


# The most query rows a split-KV kernel's tile has (a decode step's).
_SPLIT_ROWS = 64


def _forward(variant, shape, compute_lse, device, tensors):
    """Launches the forward of `variant` on `tensors` (of `shape`): the
    family's split-KV kernel where it has one and the call takes it (few
    (batch, head, query block) tiles, or a decode step's few rows, against
    long keys: validate.takes_split_kernel), else the plain one."""
    sms = _sm_count(device)
    if variant.has_decode and validate.takes_split_kernel(
            shape.batch, shape.query_heads, shape.queries, shape.keys, sms,
            _SPLIT_ROWS):
        try:
            kern = kernel_for(variant, "decode", device)
        except KernelNotFound:
            kern = None
        if kern is not None:
            splits = kern.splits(tensors)
            # One run: the split kernel still where its few-row tile (the
            # measured 64-row form) holds the rows.
            rows = kern.manifest["block_rows"]
            if splits > 1 or shape.queries <= rows <= _SPLIT_ROWS:
                if "lse" not in tensors:
                    tensors["lse"] = torch.empty(shape.lse_shape(),
                                                 dtype=torch.float32,
                                                 device=device)
                with torch.cuda.device(device):
                    kern.launch(tensors, splits=splits)
                launches[kern.name] += 1
                return
    # A KV cache's forward writes the LSE too.
    kind = "train" if compute_lse and variant.kv_cache is None else "fwd"
    _launch(variant, kind, device, tensors)


def _without_keys(out, lse, sinks):
    """O = 0 and LSE = -inf (the sink with sinks, heads the LSE's
    second-to-last dimension): the result of rows that see no key."""
    out.zero_()
    if lse.numel():
        if sinks is None:
            lse.fill_(-math.inf)
        else:
            lse.copy_(sinks.float().view(-1, 1).expand_as(lse))
    return out, lse


def run_forward(q, k, v, bias, mask, causal, scale, window, compute_lse,
                out=None, sinks=None, softcap=None):
    """Checks, then launches the forward into `out` (any strides; a new
    contiguous tensor if None). Returns (O, LSE or an empty tensor)."""
    shape = _check_forward(q, k, v, bias, mask, scale, window, sinks=sinks)
    if out is None:
        # O in Q's memory order (as SDPA's kernels return it): a [B, S, H, D]
        # caller gets [B, S, H, D] memory and no copy when it merges heads.
        out = torch.empty_like(q) if shape.value_dim == shape.head_dim else \
            torch.empty(shape.output_shape(), dtype=q.dtype, device=q.device)
    else:
        validate.check_output(_info("out", out), shape)
    lse = torch.empty(shape.lse_shape() if compute_lse else (0,),
                      dtype=torch.float32, device=q.device)
    if out.numel() == 0:
        return out, lse
    if shape.keys == 0:  # every row fully masked
        return _without_keys(out, lse, sinks)
    packing = validate.query_head_packing(
        shape, [_info("q", q), _info("o", out)], causal, window,
        bias is not None or mask is not None)
    if packing is not None:
        # Decoding with grouped query heads: a non-GQA call on views (the
        # one row of a causal M = 1 call sees every key; of a windowed one,
        # the keys from keys_from on), the sinks folded in after it.
        views = {name: t.as_strided(*packing[name])
                 for name, t in (("q", q), ("o", out))}
        first = packing["keys_from"]
        row_lse = lse
        if sinks is not None and not compute_lse:
            row_lse = torch.empty(shape.lse_shape(), dtype=torch.float32,
                                  device=q.device)
        packed_shape = dataclasses.replace(
            shape, query_heads=shape.kv_heads,
            queries=shape.group * shape.queries, keys=shape.keys - first)
        variant = _variant(packed_shape, q.dtype, None, None, False, scale,
                           None, softcap=softcap)
        tensors = dict(q=views["q"], k=k[:, :, first:], v=v[:, :, first:],
                       o=views["o"])
        if row_lse.numel():
            tensors["lse"] = row_lse.view(packing["q"][0][:3])
        _forward(variant, packed_shape, bool(row_lse.numel()), q.device,
                 tensors)
        if sinks is not None:
            fold_sinks(out, row_lse, sinks)
        return out, lse
    variant = _variant(shape, q.dtype, bias, mask, causal, scale, window,
                       sinks is not None, softcap)
    tensors = dict(q=q, k=k, v=v, o=out, **_score_operands(shape, bias, mask))
    if sinks is not None:
        # The kernels take f32 sinks (one per query head: a copy of no cost).
        tensors["sinks"] = sinks.detach().float().contiguous()
    if compute_lse:
        tensors["lse"] = lse
    _forward(variant, shape, compute_lse, q.device, tensors)
    return out, lse


def run_backward(grad_out, q, k, v, out, lse, bias, mask, causal, scale,
                 window, grads=None, sinks=None, softcap=None):
    """Checks, then launches the backward into `grads` = (dQ, dK, dV) (any
    strides; new contiguous tensors if None). With the forward's `sinks`,
    returns (dQ, dK, dV, d sinks)."""
    shape = _check_backward(grad_out, q, k, v, out, lse, bias, mask, scale,
                            window, sinks=sinks)
    if grads is None:
        grads = tuple(torch.empty_like(t) for t in (q, k, v))
    dq, dk, dv = grads
    if shape.queries == 0 or shape.keys == 0 or dq.numel() == 0:
        for g in grads:
            g.zero_()
        # O = 0 (or no rows): D = rowsum(dO O) = 0.
        return grads if sinks is None else grads + (torch.zeros_like(sinks),)
    # The atomic backward unless torch asks for deterministic algorithms.
    variant = backward_variant(
        _variant(shape, q.dtype, bias, mask, causal, scale, window,
                 sinks is not None, softcap),
        torch.are_deterministic_algorithms_enabled(), shape.keys,
        chip_of(_device_index(q.device)))
    tensors = dict(q=q, k=k, v=v, o=out, do=grad_out, lse=lse, dq=dq, dk=dk,
                   dv=dv, **_score_operands(shape, bias, mask))
    workspaces = _launch(variant, "train_backward", q.device, tensors)
    if sinks is None:
        return grads
    return grads + (sinks_gradient(lse, workspaces["d"], sinks),)


@torch.library.custom_op("flash_mlir::attention_forward", mutates_args=())
def attention_forward(q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor],
                      mask: Optional[Tensor], causal: bool, scale: float,
                      window: Optional[int], compute_lse: bool,
                      sinks: Optional[Tensor] = None,
                      softcap: Optional[float] = None) -> Tuple[Tensor, Tensor]:
    """O [B, Hq, M, Dv] and, with compute_lse, LSE [B, Hq, M] (else an
    empty tensor)."""
    return run_forward(q, k, v, bias, mask, causal, scale, window, compute_lse,
                       sinks=sinks, softcap=softcap)


@attention_forward.register_fake
def _attention_forward_fake(q, k, v, bias, mask, causal, scale, window,
                            compute_lse, sinks=None, softcap=None):
    shape = _check_forward(q, k, v, bias, mask, scale, window, fake=True,
                           sinks=sinks)
    o = torch.empty_like(q) if shape.value_dim == shape.head_dim else \
        q.new_empty(shape.output_shape())
    lse = q.new_empty(shape.lse_shape() if compute_lse else (0,),
                      dtype=torch.float32)
    return o, lse


def fold_sinks(out, lse, sinks):
    """Makes O [B, Hq, M, Dv] and LSE [B, Hq, M] of a call without sinks
    those of the call with them, in place: the sink joins each row's
    denominator, so O *= sigmoid(LSE - sink) and LSE = logaddexp(LSE, sink)
    (one pass over O: what lets a decode with sinks pack its grouped query
    heads, whose rows have different sinks)."""
    sink = sinks.detach().float()[None, :, None]
    # NaN only where both are -inf (a row without keys and a -inf sink):
    # O is 0 there.
    keep = torch.sigmoid(lse - sink).nan_to_num_(0.0)
    out.copy_(out.float() * keep[..., None])
    lse.copy_(torch.logaddexp(lse, sink))


def sinks_gradient(lse, row_dot, sinks):
    """d sinks = -sum_{b,i} exp(sink_h - LSE) D with D = rowsum(dO O) (the
    backward kernels' workspace `d`): the sink's probability times its
    dS = P (dP - D), dP = 0 (its value row is zero). The kernels need no
    sinks for dQ, dK, dV; this is one pass over [B, Hq, M] beside them."""
    # exp(sink - LSE) is NaN only where both are -inf (a fully masked row
    # and a -inf sink), whose D is 0.
    prob = torch.exp(sinks.float()[None, :, None] - lse).nan_to_num_(0.0)
    return torch.einsum("bhm,bhm->h", prob, row_dot).neg_().to(sinks.dtype)


def _check_backward(grad_out, q, k, v, out, lse, bias, mask, scale, window,
                    fake=False, sinks=None):
    return validate.check_backward(
        _info("grad_output", grad_out, fake), _info("q", q, fake),
        _info("k", k, fake), _info("v", v, fake), _info("output", out, fake),
        _info("lse", lse, fake), _info("bias", bias, fake),
        _info("mask", mask, fake), scale, window, sinks=_info("sinks", sinks, fake))


@torch.library.custom_op("flash_mlir::attention_backward", mutates_args=())
def attention_backward(grad_out: Tensor, q: Tensor, k: Tensor, v: Tensor,
                       out: Tensor, lse: Tensor, bias: Optional[Tensor],
                       mask: Optional[Tensor], causal: bool, scale: float,
                       window: Optional[int], softcap: Optional[float] = None
                       ) -> Tuple[Tensor, Tensor, Tensor]:
    """dQ, dK, dV of attention_forward from its O and LSE (which may come
    from elsewhere, e.g. merged across devices)."""
    return run_backward(grad_out, q, k, v, out, lse, bias, mask, causal, scale,
                        window, softcap=softcap)


@attention_backward.register_fake
def _attention_backward_fake(grad_out, q, k, v, out, lse, bias, mask, causal,
                             scale, window, softcap=None):
    _check_backward(grad_out, q, k, v, out, lse, bias, mask, scale, window,
                    fake=True)
    return (torch.empty_like(q), torch.empty_like(k), torch.empty_like(v))


@torch.library.custom_op("flash_mlir::attention_backward_sinks",
                         mutates_args=())
def attention_backward_sinks(grad_out: Tensor, q: Tensor, k: Tensor,
                             v: Tensor, out: Tensor, lse: Tensor,
                             bias: Optional[Tensor], mask: Optional[Tensor],
                             causal: bool, scale: float,
                             window: Optional[int], sinks: Tensor,
                             softcap: Optional[float] = None
                             ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """attention_backward of a forward with sinks, and d sinks."""
    return run_backward(grad_out, q, k, v, out, lse, bias, mask, causal, scale,
                        window, sinks=sinks, softcap=softcap)


@attention_backward_sinks.register_fake
def _attention_backward_sinks_fake(grad_out, q, k, v, out, lse, bias, mask,
                                   causal, scale, window, sinks, softcap=None):
    _check_backward(grad_out, q, k, v, out, lse, bias, mask, scale, window,
                    fake=True, sinks=sinks)
    return (torch.empty_like(q), torch.empty_like(k), torch.empty_like(v),
            torch.empty_like(sinks))


def _setup_context(ctx, inputs, output):
    (q, k, v, bias, mask, causal, scale, window, compute_lse, sinks,
     softcap) = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse, bias, mask, sinks)
    ctx.causal, ctx.scale, ctx.window = causal, scale, window
    ctx.softcap = softcap
    ctx.compute_lse = compute_lse
    # LSE is an output, not differentiable (as in FlashAttention).
    ctx.mark_non_differentiable(lse)
    ctx.set_materialize_grads(False)


def _backward(ctx, grad_o, grad_lse):
    q, k, v, o, lse, bias, mask, sinks = ctx.saved_tensors
    if ctx.needs_input_grad[3]:
        raise RuntimeError("flash_mlir attention: bias receives no gradient "
                           "(detach it, or use SDPA for a learned bias)")
    if grad_o is None:
        return (None,) * 11
    if not ctx.compute_lse:
        raise RuntimeError("flash_mlir attention: the forward ran without "
                           "its log-sum-exp (compute_lse=False), so it has "
                           "no backward; call flash_mlir.torch.attention")
    dsinks = None
    if sinks is not None:
        # The sinks variant's own backward kernels (the same as without
        # sinks), so that a family serves a model whole.
        dq, dk, dv, dsinks = attention_backward_sinks(
            grad_o, q, k, v, o, lse, bias, mask, ctx.causal, ctx.scale,
            ctx.window, sinks, ctx.softcap)
        if not ctx.needs_input_grad[9]:
            dsinks = None
    else:
        dq, dk, dv = attention_backward(grad_o, q, k, v, o, lse, bias, mask,
                                        ctx.causal, ctx.scale, ctx.window,
                                        ctx.softcap)
    return dq, dk, dv, None, None, None, None, None, None, dsinks, None


attention_forward.register_autograd(_backward, setup_context=_setup_context)


def attention(q: Tensor, k: Tensor, v: Tensor, *, causal: bool = False,
              scale: Optional[float] = None, window: Optional[int] = None,
              bias: Optional[Tensor] = None, mask: Optional[Tensor] = None,
              sinks: Optional[Tensor] = None, softcap: Optional[float] = None,
              return_lse: bool = False):
    """Scaled dot-product attention on flash-mlir's kernels; see the module
    docstring. Returns O, or (O, LSE) with return_lse."""
    _check_call(scale, window, softcap, q=q, k=k, v=v)
    scale = _scale_of(q, 4, "[B, H, S, D]", scale)
    grad = torch.is_grad_enabled()
    if grad and bias is not None and bias.requires_grad:
        raise ValueError("bias: requires grad, but the bias receives no "
                         "gradient from flash_mlir attention (detach it)")
    compute_lse = return_lse or (grad and any(
        t is not None and t.requires_grad for t in (q, k, v, sinks)))
    o, lse = attention_forward(q, k, v, bias, mask, bool(causal), float(scale),
                               window, compute_lse, sinks,
                               None if softcap is None else float(softcap))
    return (o, lse) if return_lse else o


# Packed variable-length sequences (FlashAttention's flash_attn_varlen_func,
# PyTorch's torch.nn.attention.varlen.varlen_attn).

def _packed(t):
    """[T, H, D] as the kernels' [1, H, T, D] (a view)."""
    return t.unsqueeze(0).transpose(1, 2)


def _check_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                  max_seqlen_k, scale, window, fake=False, sinks=None):
    return validate.check_varlen(
        _info("q", q, fake), _info("k", k, fake), _info("v", v, fake),
        _info("cu_seqlens_q", cu_seqlens_q, fake),
        _info("cu_seqlens_k", cu_seqlens_k, fake), max_seqlen_q,
        max_seqlen_k, scale, window, sinks=_info("sinks", sinks, fake))


def _varlen_variant(shape, q, causal, scale, window, max_seqlen_k, sinks,
                    softcap):
    return Variant.of(str(q.dtype).replace("torch.", ""), shape.head_dim,
                      shape.value_dim, causal,
                      _effective_window(window, max_seqlen_k), scale,
                      sinks=sinks is not None, varlen=True, softcap=softcap)


def run_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                       max_seqlen_k, causal, scale, window, compute_lse,
                       sinks=None, softcap=None):
    """Checks, then launches the packed forward. Returns (O [Tq, Hq, Dv],
    LSE [Hq, Tq] or an empty tensor)."""
    shape = _check_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                          max_seqlen_k, scale, window, sinks=sinks)
    out = q.new_empty((shape.queries, shape.query_heads, shape.value_dim))
    lse = torch.empty((shape.query_heads, shape.queries) if compute_lse
                      else (0,), dtype=torch.float32, device=q.device)
    if out.numel() == 0:
        return out, lse
    if shape.keys == 0:  # no sequence has a key
        return _without_keys(out, lse, sinks)
    variant = _varlen_variant(shape, q, causal, scale, window, max_seqlen_k,
                              sinks, softcap)
    tensors = dict(q=_packed(q), k=_packed(k), v=_packed(v), o=_packed(out),
                   cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k)
    if sinks is not None:
        tensors["sinks"] = sinks.detach().float().contiguous()
    if compute_lse:
        tensors["lse"] = lse.unsqueeze(0)
    _launch(variant, "train" if compute_lse else "fwd", q.device, tensors,
            {"max_seqlen_q": max_seqlen_q})
    return out, lse


def run_varlen_backward(grad_out, q, k, v, out, lse, cu_seqlens_q,
                        cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal,
                        scale, window, sinks=None, softcap=None):
    """Checks, then launches the packed backward. Returns (dQ, dK, dV,
    d sinks or an empty tensor)."""
    shape = validate.check_varlen_backward(
        _info("grad_output", grad_out), _info("q", q), _info("k", k),
        _info("v", v), _info("output", out), _info("lse", lse),
        _info("cu_seqlens_q", cu_seqlens_q),
        _info("cu_seqlens_k", cu_seqlens_k), max_seqlen_q, max_seqlen_k,
        scale, window, sinks=_info("sinks", sinks))
    grads = tuple(torch.empty_like(t) for t in (q, k, v))
    no_sinks = q.new_empty((0,))
    if shape.queries == 0 or shape.keys == 0 or grads[0].numel() == 0:
        for g in grads:
            g.zero_()
        return grads + (no_sinks if sinks is None else torch.zeros_like(sinks),)
    variant = backward_variant(
        _varlen_variant(shape, q, causal, scale, window, max_seqlen_k, sinks,
                        softcap),
        torch.are_deterministic_algorithms_enabled())
    dq, dk, dv = grads
    tensors = dict(q=_packed(q), k=_packed(k), v=_packed(v), o=_packed(out),
                   do=_packed(grad_out), lse=lse.unsqueeze(0),
                   cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                   dq=_packed(dq), dk=_packed(dk), dv=_packed(dv))
    workspaces = _launch(variant, "train_backward", q.device, tensors,
                         {"max_seqlen_q": max_seqlen_q,
                          "max_seqlen_k": max_seqlen_k})
    if sinks is None:
        return grads + (no_sinks,)
    return grads + (sinks_gradient(lse.unsqueeze(0), workspaces["d"], sinks),)


@torch.library.custom_op("flash_mlir::varlen_forward", mutates_args=())
def varlen_forward(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Tensor,
                   cu_seqlens_k: Tensor, max_seqlen_q: int, max_seqlen_k: int,
                   causal: bool, scale: float, window: Optional[int],
                   compute_lse: bool, sinks: Optional[Tensor] = None,
                   softcap: Optional[float] = None) -> Tuple[Tensor, Tensor]:
    """O [Tq, Hq, Dv] and, with compute_lse, LSE [Hq, Tq] (else an empty
    tensor) of packed sequences."""
    return run_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k,
                              max_seqlen_q, max_seqlen_k, causal, scale,
                              window, compute_lse, sinks, softcap)


@varlen_forward.register_fake
def _varlen_forward_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                         max_seqlen_k, causal, scale, window, compute_lse,
                         sinks=None, softcap=None):
    shape = _check_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                          max_seqlen_k, scale, window, fake=True, sinks=sinks)
    o = q.new_empty((shape.queries, shape.query_heads, shape.value_dim))
    lse = q.new_empty((shape.query_heads, shape.queries) if compute_lse
                      else (0,), dtype=torch.float32)
    return o, lse


@torch.library.custom_op("flash_mlir::varlen_backward", mutates_args=())
def varlen_backward(grad_out: Tensor, q: Tensor, k: Tensor, v: Tensor,
                    out: Tensor, lse: Tensor, cu_seqlens_q: Tensor,
                    cu_seqlens_k: Tensor, max_seqlen_q: int,
                    max_seqlen_k: int, causal: bool, scale: float,
                    window: Optional[int], sinks: Optional[Tensor] = None,
                    softcap: Optional[float] = None
                    ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """dQ, dK, dV of varlen_forward from its O and LSE, and d sinks (an
    empty tensor without sinks)."""
    return run_varlen_backward(grad_out, q, k, v, out, lse, cu_seqlens_q,
                               cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                               causal, scale, window, sinks, softcap)


@varlen_backward.register_fake
def _varlen_backward_fake(grad_out, q, k, v, out, lse, cu_seqlens_q,
                          cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal,
                          scale, window, sinks=None, softcap=None):
    validate.check_varlen_backward(
        _info("grad_output", grad_out, True), _info("q", q, True),
        _info("k", k, True), _info("v", v, True), _info("output", out, True),
        _info("lse", lse, True), _info("cu_seqlens_q", cu_seqlens_q, True),
        _info("cu_seqlens_k", cu_seqlens_k, True), max_seqlen_q,
        max_seqlen_k, scale, window, sinks=_info("sinks", sinks, True))
    return (torch.empty_like(q), torch.empty_like(k), torch.empty_like(v),
            q.new_empty((0,)) if sinks is None else torch.empty_like(sinks))


def _varlen_setup_context(ctx, inputs, output):
    (q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, window, compute_lse,
     sinks, softcap) = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse, cu_q, cu_k, sinks)
    ctx.bounds = (max_q, max_k)
    ctx.causal, ctx.scale, ctx.window = causal, scale, window
    ctx.compute_lse, ctx.softcap = compute_lse, softcap
    ctx.mark_non_differentiable(lse)
    ctx.set_materialize_grads(False)


def _varlen_backward(ctx, grad_o, grad_lse):
    q, k, v, o, lse, cu_q, cu_k, sinks = ctx.saved_tensors
    if grad_o is None:
        return (None,) * 13
    if not ctx.compute_lse:
        raise RuntimeError("flash_mlir varlen attention: the forward ran "
                           "without its log-sum-exp (compute_lse=False), so "
                           "it has no backward; call "
                           "flash_mlir.torch.varlen_attention")
    dq, dk, dv, dsinks = varlen_backward(
        grad_o, q, k, v, o, lse, cu_q, cu_k, *ctx.bounds, ctx.causal,
        ctx.scale, ctx.window, sinks, ctx.softcap)
    if sinks is None or not ctx.needs_input_grad[11]:
        dsinks = None
    return (dq, dk, dv) + (None,) * 8 + (dsinks, None)


varlen_forward.register_autograd(_varlen_backward,
                                 setup_context=_varlen_setup_context)


def _scale_of(q, rank, layout, scale):
    """The call's scale (default 1/sqrt(D)) once Q has its rank."""
    if q.dim() != rank:
        raise ValueError(f"q: expected a rank-{rank} tensor {layout}, got "
                         f"shape {list(q.shape)}")
    return 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale


def _check_call(scale, window, softcap, **tensors):
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor, got "
                            f"{type(t).__name__}")
    validate.check_scale(scale)
    validate.check_window(window)
    validate.check_softcap(softcap)


def varlen_attention(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Tensor,
                     cu_seqlens_k: Tensor, max_seqlen_q: int,
                     max_seqlen_k: int, *, causal: bool = False,
                     scale: Optional[float] = None,
                     window: Optional[int] = None,
                     sinks: Optional[Tensor] = None,
                     softcap: Optional[float] = None,
                     return_lse: bool = False):
    """Attention over packed variable-length sequences, FlashAttention's
    flash_attn_varlen_func: Q [Tq, Hq, D], K [Tk, Hkv, D], V [Tk, Hkv, Dv]
    hold the sequences' tokens one after another; int32 `cu_seqlens_q` and
    `cu_seqlens_k` [S + 1] (on Q's device) are where each starts (sequence s
    has the queries cu_seqlens_q[s]:cu_seqlens_q[s + 1] and the keys
    cu_seqlens_k[s]:cu_seqlens_k[s + 1]); `max_seqlen_q` and
    `max_seqlen_k` bound a sequence's queries and keys (they size the
    grid: a larger value costs idle CTAs, a smaller one leaves rows
    unwritten). Each query sees only its own sequence's keys; `causal` and
    `window` align bottom-right per sequence; `scale`, `sinks` [Hq],
    `softcap` and GQA as in `attention`. Rows past cu_seqlens_q[-1] (up to max_seqlen_q
    of them) get O = 0 and LSE = -inf. Returns O [Tq, Hq, Dv], or (O, LSE
    [Hq, Tq]) with return_lse; differentiable in Q, K, V and the sinks."""
    _check_call(scale, window, softcap, q=q, k=k, v=v,
                cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k)
    scale = _scale_of(q, 3, "[T, H, D] (packed tokens)", scale)
    compute_lse = return_lse or (torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (q, k, v, sinks)))
    o, lse = varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                            max_seqlen_k, bool(causal), float(scale), window,
                            compute_lse, sinks,
                            None if softcap is None else float(softcap))
    return (o, lse) if return_lse else o


def varlen_attn(query: Tensor, key: Tensor, value: Tensor, cu_seq_q: Tensor,
                cu_seq_k: Tensor, max_q: int, max_k: int, *,
                return_aux=None, scale: Optional[float] = None,
                window_size=(-1, -1), is_causal: bool = False,
                enable_gqa: bool = False):
    """torch.nn.attention.varlen.varlen_attn's signature on flash-mlir's
    kernels (a drop-in replacement): `window_size` (left, right) with
    right -1 (none) or 0 (causal) and left -1 (none) or W; `is_causal` as
    PyTorch 2.9's; with `return_aux` whose `lse` is true, returns (O, LSE).
    GQA is always allowed (`enable_gqa` is accepted for the signature)."""
    if len(window_size) != 2:
        raise ValueError(f"window_size: expected (left, right), got "
                         f"{window_size!r}")
    left, right = window_size
    if right not in (-1, 0):
        raise ValueError(f"window_size: a right window of {right} is not "
                         "supported (-1: none, 0: causal)")
    if left < -1:
        raise ValueError(f"window_size: expected left >= -1, got {left}")
    want_lse = bool(return_aux is not None and getattr(return_aux, "lse",
                                                       False))
    return varlen_attention(query, key, value, cu_seq_q, cu_seq_k, max_q,
                            max_k, causal=is_causal or right == 0,
                            scale=scale, window=None if left < 0 else left,
                            return_lse=want_lse)


# KV caches (FlashAttention's flash_attn_with_kvcache).

def _append_to_cache(k_cache, v_cache, k, v, cache_seqlens, block_table):
    """Writes the new keys and values after each sequence's cached ones."""
    batch, new = k.shape[:2]
    pos = cache_seqlens.long()[:, None] + torch.arange(
        new, device=k.device)[None, :]
    if block_table is None:
        rows = torch.arange(batch, device=k.device)[:, None].expand(batch, new)
        k_cache[rows, pos] = k
        v_cache[rows, pos] = v
    else:
        page = k_cache.shape[1]
        pages = block_table.long().gather(1, pos // page)
        k_cache[pages, pos % page] = k
        v_cache[pages, pos % page] = v


def _check_kvcache(q, k_cache, v_cache, cache_seqlens, block_table, k, v,
                   scale, window, sinks, fake=False):
    return validate.check_kvcache(
        _info("q", q, fake), _info("k_cache", k_cache, fake),
        _info("v_cache", v_cache, fake),
        _info("cache_seqlens", cache_seqlens, fake),
        _info("block_table", block_table, fake), _info("k", k, fake),
        _info("v", v, fake), scale, window, sinks=_info("sinks", sinks, fake))


def run_with_kvcache(q, k_cache, v_cache, cache_seqlens, block_table, k, v,
                     causal, scale, window, sinks=None, softcap=None):
    """Checks, appends k and v to the cache, then launches. Returns (O
    [B, M, Hq, Dv], LSE [B, Hq, M])."""
    shape = _check_kvcache(q, k_cache, v_cache, cache_seqlens, block_table, k,
                           v, scale, window, sinks)
    lengths = cache_seqlens
    if k is not None:
        _append_to_cache(k_cache, v_cache, k, v, cache_seqlens, block_table)
        lengths = (cache_seqlens + k.shape[1]).to(torch.int32)
    out = q.new_empty(q.shape[:3] + (shape.value_dim,))
    lse = torch.empty(shape.lse_shape(), dtype=torch.float32, device=q.device)
    if out.numel() == 0:
        return out, lse
    if shape.keys == 0:
        return _without_keys(out, lse, sinks)
    page = k_cache.shape[1] if block_table is not None else 0
    q4, o4 = q.transpose(1, 2), out.transpose(1, 2)
    tensors = dict(k=k_cache.transpose(1, 2), v=v_cache.transpose(1, 2),
                   key_lengths=lengths)
    if block_table is not None:
        tensors["block_table"] = block_table
    # Grouped query heads decode as the rows of one head (see
    # validate.query_head_packing), the sinks folded in after it;
    # per-sequence windows keep the heads apart.
    packing = validate.query_head_packing(
        shape, [_info("q", q4), _info("o", o4)], causal, None,
        window is not None)
    if packing is not None:
        shape = dataclasses.replace(shape, query_heads=shape.kv_heads,
                                    queries=shape.group * shape.queries)
        tensors.update(q=q4.as_strided(*packing["q"]),
                       o=o4.as_strided(*packing["o"]),
                       lse=lse.view(packing["q"][0][:3]))
        causal = False  # one row: every key of its sequence
    else:
        tensors.update(q=q4, o=o4, lse=lse)
    fold = packing is not None and sinks is not None
    if sinks is not None and not fold:
        tensors["sinks"] = sinks.detach().float().contiguous()
    variant = Variant.of(str(q.dtype).replace("torch.", ""), shape.head_dim,
                         shape.value_dim, causal,
                         _effective_window(window, shape.keys), scale,
                         sinks=sinks is not None and not fold, kv_cache=page,
                         softcap=softcap)
    _forward(variant, shape, True, q.device, tensors)
    if fold:
        fold_sinks(o4, lse, sinks)
    return out, lse


@torch.library.custom_op("flash_mlir::attention_with_kvcache",
                         mutates_args=("k_cache", "v_cache"))
def attention_with_kvcache_op(q: Tensor, k_cache: Tensor, v_cache: Tensor,
                              cache_seqlens: Tensor,
                              block_table: Optional[Tensor],
                              k: Optional[Tensor], v: Optional[Tensor],
                              causal: bool, scale: float,
                              window: Optional[int],
                              sinks: Optional[Tensor],
                              softcap: Optional[float] = None
                              ) -> Tuple[Tensor, Tensor]:
    """O [B, M, Hq, Dv] and LSE [B, Hq, M] against a KV cache, after
    appending k and v to it."""
    return run_with_kvcache(q, k_cache, v_cache, cache_seqlens, block_table,
                            k, v, causal, scale, window, sinks, softcap)


@attention_with_kvcache_op.register_fake
def _attention_with_kvcache_fake(q, k_cache, v_cache, cache_seqlens,
                                 block_table, k, v, causal, scale, window,
                                 sinks, softcap=None):
    shape = _check_kvcache(q, k_cache, v_cache, cache_seqlens, block_table, k,
                           v, scale, window, sinks, fake=True)
    return (q.new_empty(tuple(q.shape[:3]) + (shape.value_dim,)),
            q.new_empty(shape.lse_shape(), dtype=torch.float32))


def attention_with_kvcache(q: Tensor, k_cache: Tensor, v_cache: Tensor,
                           cache_seqlens, k: Optional[Tensor] = None,
                           v: Optional[Tensor] = None, *,
                           block_table: Optional[Tensor] = None,
                           causal: bool = False,
                           scale: Optional[float] = None,
                           window: Optional[int] = None,
                           sinks: Optional[Tensor] = None,
                           softcap: Optional[float] = None,
                           return_lse: bool = False):
    """Decoding and chunked prefill against a KV cache, FlashAttention's
    flash_attn_with_kvcache: Q [B, M, Hq, D]; the cache K [B, N, Hkv, D],
    V [B, N, Hkv, Dv], or with `block_table` (int32 [B, P]) pages
    [num_pages, page_size, Hkv, D] (page_size a multiple of 16 up to 256)
    where key j of sequence b is row j % page_size of page
    block_table[b, j // page_size]; `cache_seqlens` (int32 [B], or an int)
    the keys each sequence has cached. With `k` and `v` [B, Mk, Hkv, D]
    the new keys and values are first written into the cache after each
    sequence's cached ones (in place; cache_seqlens + Mk must fit the
    cache), and sequence b then has cache_seqlens[b] + Mk keys. `causal`
    and `window` align to each sequence's last key; GQA, `scale`, `sinks`
    and `softcap` as in `attention`. Few query rows against long caches take the
    split-KV kernels, grouped query heads packed into one tile. Returns O
    [B, M, Hq, Dv], or (O, LSE [B, Hq, M]) with return_lse. Not
    differentiable (an inference call)."""
    if isinstance(cache_seqlens, int) and not isinstance(cache_seqlens, bool):
        if not isinstance(q, Tensor):
            raise TypeError(f"q: expected a torch.Tensor, got "
                            f"{type(q).__name__}")
        cache_seqlens = torch.full((q.shape[0],), cache_seqlens,
                                   dtype=torch.int32, device=q.device)
    _check_call(scale, window, softcap, q=q, k_cache=k_cache,
                v_cache=v_cache, cache_seqlens=cache_seqlens)
    scale = _scale_of(q, 4, "[B, S, H, D]", scale)
    o, lse = attention_with_kvcache_op(q, k_cache, v_cache, cache_seqlens,
                                       block_table, k, v, bool(causal),
                                       float(scale), window, sinks,
                                       None if softcap is None else float(softcap))
    return (o, lse) if return_lse else o
