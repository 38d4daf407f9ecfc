"""flash-mlir as PyTorch's SDPA flash-attention implementation.

    import flash_mlir.sdpa
    torch.nn.attention.activate_flash_attention_impl("flash_mlir")
    # or: flash_mlir.sdpa.activate()

Importing this module registers the implementation under the name
"flash_mlir" (torch >= 2.11: torch.nn.attention.register_flash_attention_impl);
activating it overrides the CUDA kernels of
aten::_scaled_dot_product_flash_attention and its backward, so unmodified
code calling F.scaled_dot_product_attention (and attention that Inductor's
patterns turn into SDPA under torch.compile) runs flash-mlir's kernels.
Activation also puts the flash backend first in SDPA's priority order (on
Hopper torch prefers cuDNN, which would never reach us);
`restore_flash_attention_impl()` undoes both.

A call our kernels cannot take (dropout, the debug mask, a head dim that is
not a multiple of 16, no kernel for the variant and no compiler to build
it, ...) runs the stock kernel instead. `fallbacks` counts the reasons,
`last_fallback` holds the latest, and each new reason is logged once on the
"flash_mlir.sdpa" logger.
"""

import logging
from collections import Counter

import torch

from flash_mlir import torch as fm
from flash_mlir import validate
from flash_mlir.kernels import KernelNotFound

NAME = "flash_mlir"
FORWARD = "_scaled_dot_product_flash_attention"
BACKWARD = "_scaled_dot_product_flash_attention_backward"
FLASH_BACKEND = 1  # torch's SDPBackend.FLASH_ATTENTION

log = logging.getLogger("flash_mlir.sdpa")
fallbacks = Counter()
handled = Counter()
last_fallback = None


def _fall_back(op, reason):
    global last_fallback
    last_fallback = f"{op}: {reason}"
    if fallbacks[last_fallback] == 0:
        log.info("flash_mlir SDPA falls back to the stock kernel: %s",
                 last_fallback)
    fallbacks[last_fallback] += 1


def unsupported_reason(query, key, value, dropout_p, return_debug_mask=False):
    """Why our kernels cannot take this SDPA flash call, or None."""
    if dropout_p:
        return f"dropout_p = {dropout_p} (no dropout in flash-mlir's kernels)"
    if return_debug_mask:
        return "return_debug_mask"
    infos = [fm._info(n, t) for n, t in (("query", query), ("key", key),
                                         ("value", value))]
    try:
        validate.check_attention(*infos)
    except (TypeError, ValueError) as e:
        return str(e)
    return None


class _Handle:
    """What activation changed: the Library holding the overrides and the
    SDPA priority order before it."""

    def __init__(self, library, order):
        self.library = library
        self.order = order

    def remove(self):
        self.library = None  # dropping the Library deregisters the kernels
        if self.order is not None:
            torch._C._set_sdp_priority_order(self.order)


def _forward(stock):
    def impl(keyset, query, key, value, dropout_p=0.0, is_causal=False,
             return_debug_mask=False, *, scale=None):
        reason = unsupported_reason(query, key, value, dropout_p,
                                    return_debug_mask)
        if reason is None:
            try:
                s = scale if scale is not None else query.shape[-1] ** -0.5
                # The stock meta kernel promises O with the query's strides.
                out, lse = fm.run_forward(query, key, value, None, None,
                                          bool(is_causal), float(s), None,
                                          True, out=torch.empty_like(query))
            except KernelNotFound as e:
                reason = str(e).splitlines()[0]
            else:
                handled[FORWARD] += 1
                seed = torch.zeros((2,), dtype=torch.uint64, device=query.device)
                offset = torch.zeros((), dtype=torch.uint64, device=query.device)
                debug = torch.empty(0, dtype=query.dtype, device=query.device)
                return (out, lse, None, None, query.shape[2], key.shape[2],
                        seed, offset, debug)
        _fall_back(FORWARD, reason)
        return stock.call_boxed(keyset, query, key, value, dropout_p, is_causal,
                                return_debug_mask, scale=scale)
    return impl


def _backward(stock):
    def impl(keyset, grad_out, query, key, value, out, logsumexp, cum_seq_q,
             cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed,
             philox_offset, *, scale=None):
        reason = unsupported_reason(query, key, value, dropout_p)
        if reason is None:
            try:
                s = scale if scale is not None else query.shape[-1] ** -0.5
                grads = tuple(torch.empty_like(t) for t in (query, key, value))
                fm.run_backward(grad_out, query, key, value, out, logsumexp,
                                None, None, bool(is_causal), float(s), None,
                                grads=grads)
            except KernelNotFound as e:
                reason = str(e).splitlines()[0]
            else:
                handled[BACKWARD] += 1
                return grads
        _fall_back(BACKWARD, reason)
        return stock.call_boxed(keyset, grad_out, query, key, value, out,
                                logsumexp, cum_seq_q, cum_seq_k, max_q, max_k,
                                dropout_p, is_causal, philox_seed,
                                philox_offset, scale=scale)
    return impl


def register():
    """The register_fn of torch.nn.attention: overrides the two CUDA
    kernels (keeping the stock ones to fall back to) and puts flash first."""
    stock_fwd = torch.library.get_kernel(f"aten::{FORWARD}", "CUDA")
    stock_bwd = torch.library.get_kernel(f"aten::{BACKWARD}", "CUDA")
    lib = torch.library.Library("aten", "IMPL")
    lib.impl(FORWARD, _forward(stock_fwd), "CUDA", with_keyset=True)
    lib.impl(BACKWARD, _backward(stock_bwd), "CUDA", with_keyset=True)
    order = None
    if hasattr(torch._C, "_get_sdp_priority_order"):
        order = _settled_priority_order()
        torch._C._set_sdp_priority_order(
            [FLASH_BACKEND] + [b for b in order if b != FLASH_BACKEND])
    return _Handle(lib, order)


def _settled_priority_order():
    """SDPA's priority order once torch has settled it. Torch chooses its
    device-dependent default (cuDNN first on Hopper) lazily, at the first
    backend choice of the process, and that choice overwrites an order set
    before it: activating before any SDPA call would otherwise leave cuDNN
    first (our kernels never called) and restore the pre-choice order."""
    if torch.cuda.is_available():
        t = torch.empty((1, 1, 16, 16), device="cuda", dtype=torch.bfloat16)
        torch._fused_sdp_choice(t, t, t)
    return [int(b) for b in torch._C._get_sdp_priority_order()]


def activate():
    torch.nn.attention.activate_flash_attention_impl(NAME)


def restore():
    torch.nn.attention.restore_flash_attention_impl()


if NAME not in torch.nn.attention.list_flash_attention_impls():
    torch.nn.attention.register_flash_attention_impl(NAME, register_fn=register)
