"""GPU checks of the SDPA registration (flash_mlir.sdpa), run by
flash_mlir.torch_check: once activated, F.scaled_dot_product_attention
(eager, under torch.compile, and attention that Inductor's patterns turn
into SDPA) runs our kernels, forward and backward, with the right numbers;
unsupported calls fall back with a reason; restoring gives the stock
kernels back."""

import math
import subprocess
import sys
import traceback

import torch
import torch.nn.functional as F

from flash_mlir.check import reference


def _rel(a, b):
    return ((a.double() - b).norm() / b.norm().clamp_min(1e-30)).item()


def _inputs(g, b, hq, hkv, s, d, dtype=torch.bfloat16):
    def r(h):
        return torch.randn(b, h, s, d, device="cuda", generator=g).to(dtype) \
            .requires_grad_()
    return r(hq), r(hkv), r(hkv)


def _grads_vs_reference(o, q, k, v, causal, g):
    """Backward of `o` against float64 autograd of the reference."""
    do = torch.randn(o.shape, device="cuda", generator=g).to(o.dtype)
    grads = torch.autograd.grad(o, (q, k, v), do)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref, _, _ = reference(q64, k64, v64, 1 / math.sqrt(q.shape[-1]), causal, None)
    ref_grads = torch.autograd.grad(ref, (q64, k64, v64), do.double())
    return _rel(o, ref.detach()), max(_rel(a, b) for a, b in zip(grads, ref_grads))


def run(record):
    from torch.nn import attention
    from flash_mlir import sdpa
    record(sdpa.NAME in attention.list_flash_attention_impls(),
           "SDPA: flash_mlir registered", str(attention.list_flash_attention_impls()))
    g = torch.Generator(device="cuda").manual_seed(11)
    sdpa.activate()
    try:
        record(attention.current_flash_attention_impl() == sdpa.NAME,
               "SDPA: flash_mlir active")
        # Eager, causal and not, GQA.
        for causal, (hq, hkv) in ((False, (8, 8)), (True, (8, 8)), (True, (8, 2))):
            q, k, v = _inputs(g, 2, hq, hkv, 333, 128)
            before = dict(sdpa.handled)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                               enable_gqa=hq != hkv)
            err, gerr = _grads_vs_reference(o, q, k, v, causal, g)
            ran = {op: sdpa.handled[op] - before.get(op, 0) for op in sdpa.handled}
            record(err < 1.6e-2 and gerr < 1.6e-2 and ran.get(sdpa.FORWARD) == 1
                   and ran.get(sdpa.BACKWARD) == 1,
                   f"SDPA eager causal={causal} Hq={hq} Hkv={hkv}",
                   f"O rel {err:.1e}, grads rel {gerr:.1e}, ours ran {ran}")
        # Fallbacks with a reason: dropout, and a head dim of 72 (not a
        # multiple of 16).
        for what, kwargs, d in (("dropout", dict(dropout_p=0.1), 64),
                                ("head dim 72", {}, 72)):
            q, k, v = _inputs(g, 1, 4, 4, 128, d)
            before = sdpa.handled[sdpa.FORWARD]
            nfall = sum(sdpa.fallbacks.values())
            F.scaled_dot_product_attention(q, k, v, **kwargs).sum().backward()
            record(sdpa.handled[sdpa.FORWARD] == before
                   and sum(sdpa.fallbacks.values()) > nfall,
                   f"SDPA falls back: {what}", str(sdpa.last_fallback))
        # torch.compile: a block calling SDPA, and Inductor's pattern 1
        # (matmul / scale, softmax, matmul), which Inductor turns into SDPA.
        torch._dynamo.reset()

        def block(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        def handwritten(q, k, v):
            inv = math.sqrt(q.shape[-1])
            return torch.matmul(q, k.transpose(-2, -1)).div(inv).softmax(dim=-1) \
                .matmul(v)

        for name, fn, causal in (("SDPA block", block, True),
                                 ("Inductor pattern 1", handwritten, False)):
            q, k, v = _inputs(g, 2, 8, 8, 256, 64)
            before = sdpa.handled[sdpa.FORWARD] + sdpa.handled[sdpa.BACKWARD]
            try:
                o = torch.compile(fn, fullgraph=True)(q, k, v)
                err, gerr = _grads_vs_reference(o, q, k, v, causal, g)
            except Exception:  # noqa: BLE001
                record(False, f"SDPA under torch.compile: {name}",
                       traceback.format_exc(limit=4))
                continue
            ran = sdpa.handled[sdpa.FORWARD] + sdpa.handled[sdpa.BACKWARD] - before
            record(err < 1.6e-2 and gerr < 1.6e-2 and ran >= 2,
                   f"SDPA under torch.compile: {name}",
                   f"O rel {err:.1e}, grads rel {gerr:.1e}, our launches {ran}")
    finally:
        sdpa.restore()
    q, k, v = _inputs(g, 1, 4, 4, 128, 64)
    before = sdpa.handled[sdpa.FORWARD]
    F.scaled_dot_product_attention(q, k, v)
    record(sdpa.handled[sdpa.FORWARD] == before
           and attention.current_flash_attention_impl() is None,
           "SDPA: restored to the stock kernels")
    print("SDPA fallbacks:", dict(sdpa.fallbacks))


_PRINT_DEFAULT_ORDER = """
import torch
t = torch.empty((1, 1, 16, 16), device="cuda", dtype=torch.bfloat16)
torch._fused_sdp_choice(t, t, t)
print(*[int(b) for b in torch._C._get_sdp_priority_order()])
"""


def main():
    failures = []

    def record(ok, what, detail=""):
        print(("ok   " if ok else "FAIL ") + what + (f": {detail}" if detail else ""))
        if not ok:
            failures.append(what)

    run(record)
    # Restoring gives back the order torch itself settles on in a process
    # that never activated us.
    child = subprocess.run([sys.executable, "-c", _PRINT_DEFAULT_ORDER],
                           capture_output=True, text=True)
    order = [int(b) for b in torch._C._get_sdp_priority_order()]
    record(child.returncode == 0 and child.stdout.split() == [str(b) for b in order],
           "SDPA: restored priority order is torch's default",
           f"restored {order}, torch's default {child.stdout.split()} {child.stderr[-300:]}")
    print(f"sdpa_check: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
