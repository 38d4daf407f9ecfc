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
denominator; differentiable). A fully masked row gives O = 0 and LSE = -inf
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
from flash_mlir.kernels import KernelCache, KernelNotFound, Variant
from flash_mlir.runtime import Kernel, tensor_info

Tensor = torch.Tensor

# Launches per kernel name, for tests and profiles: which kernels ran.
launches = Counter()

_caches = {}
_loaded = {}


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


def kernel_for(variant: Variant, kind: str, device: torch.device) -> Kernel:
    index = device.index if device.index is not None else torch.cuda.current_device()
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


def _variant(shape, q_dtype, bias, mask, causal, scale, window, sinks=False):
    return Variant.of(str(q_dtype).replace("torch.", ""), shape.head_dim,
                      shape.value_dim, causal,
                      _effective_window(window, shape.keys), scale,
                      None if bias is None else str(bias.dtype).replace("torch.", ""),
                      mask is not None, sinks)


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


def _launch(variant, kind, device, tensors):
    # The tensors are checked (by run_forward / run_backward): no second
    # check against the manifest.
    kern = kernel_for(variant, kind, device)
    if device.index is None or device.index == torch.cuda.current_device():
        workspaces = kern.launch(tensors)
    else:
        with torch.cuda.device(device):
            workspaces = kern.launch(tensors)
    launches[kern.name] += 1
    return workspaces


@functools.lru_cache(maxsize=None)
def _sm_count(device):
    return torch.cuda.get_device_properties(device).multi_processor_count


def _forward(variant, shape, compute_lse, device, tensors):
    """Launches the forward of `variant` on `tensors` (of `shape`): with few
    (batch, head, query block) tiles against long keys the family's
    split-KV kernel where it has one and it splits, else the plain one."""
    sms = _sm_count(device)
    if variant.has_decode and validate.wants_key_splits(
            shape.batch, shape.query_heads, shape.queries, shape.keys, sms):
        try:
            kern = kernel_for(variant, "decode", device)
        except KernelNotFound:
            kern = None
        if kern is not None:
            splits = kern.splits(tensors)
            if splits > 1:
                if "lse" not in tensors:
                    tensors["lse"] = torch.empty(shape.lse_shape(),
                                                 dtype=torch.float32,
                                                 device=device)
                with torch.cuda.device(device):
                    kern.launch(tensors, splits=splits)
                launches[kern.name] += 1
                return
    _launch(variant, "train" if compute_lse else "fwd", device, tensors)


def run_forward(q, k, v, bias, mask, causal, scale, window, compute_lse,
                out=None, sinks=None):
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
        out.zero_()
        if sinks is None:
            lse.fill_(-math.inf)
        elif compute_lse:
            lse.copy_(sinks.float()[None, :, None].expand(lse.shape))
        return out, lse
    packing = validate.query_head_packing(
        shape, [_info("q", q), _info("o", out)], causal, window,
        bias is not None or mask is not None or sinks is not None)
    if packing is not None:
        # Decoding with grouped query heads: a non-GQA call on views (the
        # one row of a causal M = 1 call sees every key; of a windowed one,
        # the keys from keys_from on).
        views = {name: t.as_strided(*packing[name])
                 for name, t in (("q", q), ("o", out))}
        first = packing["keys_from"]
        packed_lse = lse.view(packing["q"][0][:3]) if compute_lse else lse
        packed_shape = dataclasses.replace(
            shape, query_heads=shape.kv_heads,
            queries=shape.group * shape.queries, keys=shape.keys - first)
        variant = _variant(packed_shape, q.dtype, None, None, False, scale,
                           None)
        tensors = dict(q=views["q"], k=k[:, :, first:], v=v[:, :, first:],
                       o=views["o"])
        if compute_lse:
            tensors["lse"] = packed_lse
        _forward(variant, packed_shape, compute_lse, q.device, tensors)
        return out, lse
    variant = _variant(shape, q.dtype, bias, mask, causal, scale, window,
                       sinks is not None)
    tensors = dict(q=q, k=k, v=v, o=out, **_score_operands(shape, bias, mask))
    if sinks is not None:
        # The kernels take f32 sinks (one per query head: a copy of no cost).
        tensors["sinks"] = sinks.detach().float().contiguous()
    if compute_lse:
        tensors["lse"] = lse
    _forward(variant, shape, compute_lse, q.device, tensors)
    return out, lse


def run_backward(grad_out, q, k, v, out, lse, bias, mask, causal, scale,
                 window, grads=None, sinks=None):
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
    variant = _variant(shape, q.dtype, bias, mask, causal, scale, window,
                       sinks is not None)
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
                      sinks: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    """O [B, Hq, M, Dv] and, with compute_lse, LSE [B, Hq, M] (else an
    empty tensor)."""
    return run_forward(q, k, v, bias, mask, causal, scale, window, compute_lse,
                       sinks=sinks)


@attention_forward.register_fake
def _attention_forward_fake(q, k, v, bias, mask, causal, scale, window,
                            compute_lse, sinks=None):
    shape = _check_forward(q, k, v, bias, mask, scale, window, fake=True,
                           sinks=sinks)
    o = torch.empty_like(q) if shape.value_dim == shape.head_dim else \
        q.new_empty(shape.output_shape())
    lse = q.new_empty(shape.lse_shape() if compute_lse else (0,),
                      dtype=torch.float32)
    return o, lse


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
                       window: Optional[int]) -> Tuple[Tensor, Tensor, Tensor]:
    """dQ, dK, dV of attention_forward from its O and LSE (which may come
    from elsewhere, e.g. merged across devices)."""
    return run_backward(grad_out, q, k, v, out, lse, bias, mask, causal, scale,
                        window)


@attention_backward.register_fake
def _attention_backward_fake(grad_out, q, k, v, out, lse, bias, mask, causal,
                             scale, window):
    _check_backward(grad_out, q, k, v, out, lse, bias, mask, scale, window,
                    fake=True)
    return (torch.empty_like(q), torch.empty_like(k), torch.empty_like(v))


@torch.library.custom_op("flash_mlir::attention_backward_sinks",
                         mutates_args=())
def attention_backward_sinks(grad_out: Tensor, q: Tensor, k: Tensor,
                             v: Tensor, out: Tensor, lse: Tensor,
                             bias: Optional[Tensor], mask: Optional[Tensor],
                             causal: bool, scale: float,
                             window: Optional[int], sinks: Tensor
                             ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """attention_backward of a forward with sinks, and d sinks."""
    return run_backward(grad_out, q, k, v, out, lse, bias, mask, causal, scale,
                        window, sinks=sinks)


@attention_backward_sinks.register_fake
def _attention_backward_sinks_fake(grad_out, q, k, v, out, lse, bias, mask,
                                   causal, scale, window, sinks):
    _check_backward(grad_out, q, k, v, out, lse, bias, mask, scale, window,
                    fake=True, sinks=sinks)
    return (torch.empty_like(q), torch.empty_like(k), torch.empty_like(v),
            torch.empty_like(sinks))


def _setup_context(ctx, inputs, output):
    q, k, v, bias, mask, causal, scale, window, compute_lse, sinks = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse, bias, mask, sinks)
    ctx.causal, ctx.scale, ctx.window = causal, scale, window
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
        return (None,) * 10
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
            ctx.window, sinks)
        if not ctx.needs_input_grad[9]:
            dsinks = None
    else:
        dq, dk, dv = attention_backward(grad_o, q, k, v, o, lse, bias, mask,
                                        ctx.causal, ctx.scale, ctx.window)
    return dq, dk, dv, None, None, None, None, None, None, dsinks


attention_forward.register_autograd(_backward, setup_context=_setup_context)


def attention(q: Tensor, k: Tensor, v: Tensor, *, causal: bool = False,
              scale: Optional[float] = None, window: Optional[int] = None,
              bias: Optional[Tensor] = None, mask: Optional[Tensor] = None,
              sinks: Optional[Tensor] = None, return_lse: bool = False):
    """Scaled dot-product attention on flash-mlir's kernels; see the module
    docstring. Returns O, or (O, LSE) with return_lse."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor, got "
                            f"{type(t).__name__}")
    if q.dim() != 4:
        raise ValueError(f"q: expected a rank-4 tensor [B, H, S, D], got "
                         f"shape {list(q.shape)}")
    validate.check_scale(scale)
    validate.check_window(window)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    grad = torch.is_grad_enabled()
    if grad and bias is not None and bias.requires_grad:
        raise ValueError("bias: requires grad, but the bias receives no "
                         "gradient from flash_mlir attention (detach it)")
    compute_lse = return_lse or (grad and any(
        t is not None and t.requires_grad for t in (q, k, v, sinks)))
    o, lse = attention_forward(q, k, v, bias, mask, bool(causal), float(scale),
                               window, compute_lse, sinks)
    return (o, lse) if return_lse else o
