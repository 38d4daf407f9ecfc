"""Kernel variants and the kernel cache of the PyTorch op (no torch here: CI
tests this module).

A `Variant` is everything that makes one compiled attention differ from
another: element type, head dims, causal, window, scale, bias and mask kind,
sinks, and the layout of the keys (dense, packed variable-length sequences,
a KV cache). Each variant is a family of kernels compiled from one MLIR file:

    <base>_fwd              O only (inference; with a KV cache O and LSE)
    <base>_train            O and LSE (the training forward, also return_lse)
    <base>_train_backward   dQ, dK, dV from Q, K, V, O, dO, LSE
    <base>_decode           split-KV O and LSE (few query rows, long keys)

Packed sequences (`varlen`, int32 cu_seqlens) have fwd, train and
train_backward; a KV cache (`kv_cache`: 0 for a contiguous cache with
per-sequence lengths, P for pages of P keys behind a block table) has fwd
and decode. A variant with `deterministic=False` (`<base>_atomic`) has only
train and train_backward, the backward adding dQ with f32 atomics
(flash-compile --deterministic=false); `backward_variant` says which form
the PyTorch op launches.

`KernelCache.manifest(variant, kind)` finds a kernel's manifest in, in order,
the directories of $FLASH_MLIR_KERNELS, the package's prebuilt kernels
(flash_mlir/kernels/<chip>) and the user cache
($FLASH_MLIR_CACHE or ~/.cache/flash-mlir, one folder per compiler build and
chip). On a miss it compiles the family with flash-compile when one is found
($FLASH_COMPILE, PATH, or this checkout's build/bin), once: later calls and
processes load the cubin from disk. Where no flash-compile exists, the error
names the variant and the command that builds it elsewhere.

    python -m flash_mlir.kernels --chip sm_90a [-o DIR] [--common] [VARIANT ...]

prebuilds variants (the common set: f16/bf16 x D 64/128 x causal or not)
into DIR; the package finds DIR through $FLASH_MLIR_KERNELS, or by itself
when DIR is flash_mlir/kernels/<chip>.
"""

import argparse
import contextlib
import dataclasses
import hashlib
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Optional

from flash_mlir import __version__

KINDS = ("fwd", "train", "train_backward", "decode")
DTYPES = ("f16", "bf16")
BIAS_DTYPES = ("f16", "bf16", "f32")
CHIPS = ("sm_80", "sm_90a")
# The largest page of a paged KV cache (FlashAttention's and vLLM's).
MAX_PAGE_SIZE = 256
# torch dtype names -> the compiler's element types.
TORCH_DTYPES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}


def f32_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def f32_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


@dataclass(frozen=True)
class Variant:
    dtype: str                      # f16 | bf16
    head_dim: int
    value_dim: int
    causal: bool = False
    window: Optional[int] = None
    scale_bits: Optional[int] = None  # f32 bit pattern; None: 1/sqrt(D)
    bias: Optional[str] = None      # bias element type, None without bias
    mask: bool = False
    sinks: bool = False             # f32 sinks [Hq] (the forward's)
    varlen: bool = False            # packed sequences, int32 cu_seqlens
    kv_cache: Optional[int] = None  # None; 0 contiguous; P: pages of P keys
    softcap_bits: Optional[int] = None  # f32 bit pattern of c in c tanh(s / c)
    # The backward as a dQ and a dK/dV kernel (True), or one dK/dV kernel
    # that adds dQ with f32 atomics (False: flash-compile
    # --deterministic=false; faster, not bitwise reproducible).
    deterministic: bool = True

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"variant: dtype {self.dtype!r} is not one of "
                             f"{', '.join(DTYPES)}")
        for what, size in (("head dim", self.head_dim),
                           ("value dim", self.value_dim)):
            if not isinstance(size, int) or size <= 0 or size % 16 or size > 256:
                raise ValueError(f"variant: {what} {size} is not a multiple "
                                 "of 16 up to 256")
        if self.bias is not None and self.bias not in BIAS_DTYPES:
            raise ValueError(f"variant: bias dtype {self.bias!r} is not one of "
                             f"{', '.join(BIAS_DTYPES)}")
        if self.window is not None and self.window < 0:
            raise ValueError(f"variant: window {self.window} is negative")
        if self.kv_cache is not None and (
                isinstance(self.kv_cache, bool) or
                not isinstance(self.kv_cache, int) or self.kv_cache < 0 or
                self.kv_cache % 16 or self.kv_cache > MAX_PAGE_SIZE):
            raise ValueError(f"variant: page size {self.kv_cache} is not a "
                             f"multiple of 16 up to {MAX_PAGE_SIZE}")
        if self.softcap_bits is not None:
            cap = self.softcap
            if not (math.isfinite(cap) and cap > 0):
                raise ValueError(f"variant: softcap {cap} is not a positive "
                                 "finite value")
        layout = "packed sequences" if self.varlen else \
            "a KV cache" if self.kv_cache is not None else None
        if self.varlen and self.kv_cache is not None:
            raise ValueError("variant: packed sequences and a KV cache are "
                             "separate variants")
        if layout and (self.bias or self.mask):
            raise ValueError(f"variant: {layout} take no bias or mask")
        if not self.deterministic and self.kv_cache is not None:
            raise ValueError("variant: a KV cache has no backward to make "
                             "atomic")

    @staticmethod
    def of(dtype, head_dim, value_dim=None, causal=False, window=None,
           scale=None, bias=None, mask=False, sinks=False, varlen=False,
           kv_cache=None, softcap=None, deterministic=True):
        """The variant of a call: torch or compiler dtype names; `scale` a
        float (None for the default)."""
        dtype = TORCH_DTYPES.get(dtype, dtype)
        bias = TORCH_DTYPES.get(bias, bias)
        value_dim = head_dim if value_dim is None else value_dim
        bits = None
        if scale is not None:
            bits = f32_bits(scale)
            if bits == f32_bits(1.0 / head_dim ** 0.5):
                bits = None  # the default, spelled out
        return Variant(dtype, head_dim, value_dim, bool(causal), window, bits,
                       bias, bool(mask), bool(sinks), bool(varlen), kv_cache,
                       None if softcap is None else f32_bits(softcap),
                       bool(deterministic))

    @property
    def scale(self) -> float:
        if self.scale_bits is None:
            return 1.0 / self.head_dim ** 0.5
        return f32_value(self.scale_bits)

    @property
    def softcap(self) -> Optional[float]:
        return None if self.softcap_bits is None else f32_value(self.softcap_bits)

    def _parts(self):
        """Each property that differs from the plain variant, as (kernel
        name part, spec part, description)."""
        parts = []
        if self.value_dim != self.head_dim:
            parts.append((f"dv{self.value_dim}", f"dv{self.value_dim}",
                          f"Dv = {self.value_dim}"))
        if self.causal:
            parts.append(("causal", "causal", "causal"))
        if self.window is not None:
            parts.append((f"w{self.window}", f"w{self.window}",
                          f"window {self.window}"))
        if self.scale_bits is not None:
            parts.append((f"s{self.scale_bits:08x}", f"scale=0x{self.scale_bits:08x}",
                          f"scale {self.scale!r}"))
        if self.softcap_bits is not None:
            parts.append((f"cap{self.softcap_bits:08x}",
                          f"softcap=0x{self.softcap_bits:08x}",
                          f"softcap {self.softcap!r}"))
        if self.bias:
            parts.append((f"bias{self.bias}", f"bias={self.bias}",
                          f"{self.bias} bias"))
        if self.mask:
            parts.append(("mask", "mask", "mask"))
        if self.sinks:
            parts.append(("sinks", "sinks", "sinks"))
        if self.varlen:
            parts.append(("varlen", "varlen", "packed sequences"))
        if self.kv_cache == 0:
            parts.append(("kvcache", "kvcache", "KV cache"))
        elif self.kv_cache:
            parts.append((f"paged{self.kv_cache}", f"paged={self.kv_cache}",
                          f"paged KV cache, pages of {self.kv_cache}"))
        if not self.deterministic:
            parts.append(("atomic", "atomic", "dQ added by atomics"))
        return parts

    @property
    def base(self) -> str:
        """The kernel family's name (a valid MLIR symbol and file name)."""
        return "_".join([f"fm_{self.dtype}_d{self.head_dim}"] +
                        [name for name, _, _ in self._parts()])

    @property
    def kinds(self):
        """The kernels of the family."""
        if self.kv_cache is not None:
            return ("fwd", "decode")
        if not self.deterministic:
            # The backward's other form: its forward kernels are the
            # deterministic family's.
            return ("train", "train_backward")
        if self.varlen:
            return ("fwd", "train", "train_backward")
        return KINDS if self.has_decode else KINDS[:3]

    def kernel(self, kind) -> str:
        if kind not in self.kinds:
            raise ValueError(f"kernel kind {kind!r} is not one of "
                             f"{self.kinds} (variant {self.spec()})")
        return f"{self.base}_{kind}"

    # A variant as text, e.g. "bf16:d128:causal:w256:bias=f32:mask", for
    # command lines and error messages.
    def spec(self) -> str:
        return ":".join([self.dtype, f"d{self.head_dim}"] +
                        [spec for _, spec, _ in self._parts()])

    @staticmethod
    def parse(text: str) -> "Variant":
        items = text.split(":")
        if len(items) < 2:
            raise ValueError(f"variant {text!r}: expected DTYPE:dD[:...]")
        dtype, rest = items[0], items[1:]
        head = value = None
        kw = {}
        for item in rest:
            if item.startswith("dv") and item[2:].isdigit():
                value = int(item[2:])
            elif item.startswith("d") and item[1:].isdigit():
                head = int(item[1:])
            elif item == "causal":
                kw["causal"] = True
            elif item.startswith("w") and item[1:].isdigit():
                kw["window"] = int(item[1:])
            elif item.startswith("scale="):
                v = item[len("scale="):]
                kw["scale"] = (f32_value(int(v, 16)) if v.startswith("0x")
                               else float(v))
            elif item.startswith("softcap="):
                v = item[len("softcap="):]
                kw["softcap"] = (f32_value(int(v, 16)) if v.startswith("0x")
                                 else float(v))
            elif item.startswith("bias="):
                kw["bias"] = item[len("bias="):]
            elif item == "mask":
                kw["mask"] = True
            elif item == "sinks":
                kw["sinks"] = True
            elif item == "varlen":
                kw["varlen"] = True
            elif item == "kvcache":
                kw["kv_cache"] = 0
            elif item.startswith("paged=") and item[len("paged="):].isdigit():
                kw["kv_cache"] = int(item[len("paged="):])
            elif item == "atomic":
                kw["deterministic"] = False
            else:
                raise ValueError(f"variant {text!r}: unknown part {item!r}")
        if head is None:
            raise ValueError(f"variant {text!r}: no head dim (dNN)")
        return Variant.of(dtype, head, value, **kw)

    def describe(self) -> str:
        return ", ".join([self.dtype, f"D = {self.head_dim}"] +
                         [text for _, _, text in self._parts()])

    def mlir(self) -> str:
        """The family's MLIR: a function per kind (`train` with the forward
        (O, LSE) and its backward, which flash-compile writes as `<fn>` and
        `<fn>_backward`)."""
        t = self.dtype

        # Packed sequences are a batch of one.
        batch = "1" if self.varlen else "?"

        def ty(width, pages=False):
            rows = self.kv_cache if pages and self.kv_cache else "?"
            return f"tensor<{batch}x?x{rows}x{width}x{t}>"

        q, o = ty(self.head_dim), ty(self.value_dim)
        k, v = ty(self.head_dim, True), ty(self.value_dim, True)
        args = [f"%q: {q}", f"%k: {k}", f"%v: {v}"]
        operands = []  # (name, type, whether the backward takes it)
        if self.bias:
            operands.append(("bias", f"tensor<?x?x?x?x{self.bias}>", True))
        if self.mask:
            operands.append(("mask", "tensor<?x?x?x?xi1>", True))
        # The backward takes no sinks: dQ, dK and dV do not depend on them
        # (the LSE carries them); their gradient is computed beside it.
        if self.sinks:
            operands.append(("sinks", "tensor<?xf32>", False))
        if self.kv_cache is not None:
            operands.append(("key_lengths", "tensor<?xi32>", False))
            if self.kv_cache:
                operands.append(("block_table", "tensor<?x?xi32>", False))
        if self.varlen:
            operands += [("cu_seqlens_q", "tensor<?xi32>", True),
                         ("cu_seqlens_k", "tensor<?xi32>", True)]
        args += [f"%{name}: {type_}" for name, type_, _ in operands]
        fwd_extras = "".join(f" {name}(%{name} : {type_})"
                             for name, type_, _ in operands)
        bwd_extras = "".join(f" {name}(%{name} : {type_})"
                             for name, type_, bwd in operands if bwd)
        attrs = []
        if self.causal:
            attrs.append("causal")
        if self.scale_bits is not None:
            attrs.append(f"scale = 0x{self.scale_bits:08X} : f32")
        if self.window is not None:
            attrs.append(f"window = {self.window} : i64")
        attr = (" {" + ", ".join(attrs) + "}") if attrs else ""
        lse = f"tensor<{batch}x?x?xf32>"
        signature = ", ".join(args)
        # Softcapping (Gemma 2, Grok): each scaled score s becomes
        # c tanh(s / c), a score_mod region the backward differentiates.
        region = ""
        if self.softcap_bits is not None:
            region = (" score_mod {\n"
                      "  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):\n"
                      f"    %cap = arith.constant 0x{self.softcap_bits:08X} : f32\n"
                      "    %x = arith.divf %s, %cap : f32\n"
                      "    %t = math.tanh %x : f32\n"
                      "    %capped = arith.mulf %t, %cap : f32\n"
                      "    flash.yield %capped : f32\n  }")
        attention = f"flash.attention %q, %k, %v{fwd_extras}{attr} : {q}, {k}, {v}"

        def with_lse(kind, fn_attrs=""):
            return (f"func.func @{self.kernel(kind)}({signature}) -> "
                    f"({o}, {lse}){fn_attrs} {{\n"
                    f"  %o, %lse = {attention} -> {o}, {lse}{region}\n"
                    f"  return %o, %lse : {o}, {lse}\n}}\n")

        parts = []
        if self.kv_cache is not None:
            # A cache's forward gives the LSE too (B x Hq x M floats), so
            # that return_lse needs no second family.
            parts.append(with_lse("fwd"))
        elif "fwd" in self.kinds:
            parts.append(
                f"func.func @{self.kernel('fwd')}({signature}) -> {o} {{\n"
                f"  %o = {attention} -> {o}{region}\n"
                f"  return %o : {o}\n}}\n")
        # Split-KV kernels (O and LSE) for few query rows against many keys,
        # for the variants that decoding takes.
        if "decode" in self.kinds:
            parts.append(with_lse("decode", " attributes {flash.key_splits}"))
        if "train" in self.kinds:
            train_args = ", ".join(args + [f"%do: {o}"])
            parts.append(
                f"func.func @{self.kernel('train')}({train_args}) -> "
                f"({o}, {q}, {k}, {v}) {{\n"
                f"  %o, %lse = {attention} -> {o}, {lse}{region}\n"
                f"  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, "
                f"%do, %lse{bwd_extras}{attr} : {q}, {k}, {v}, {o}, {lse}"
                f"{region}\n"
                f"  return %o, %dq, %dk, %dv : {o}, {q}, {k}, {v}\n}}\n")
        return f"// flash-mlir kernel family {self.spec()}\n" + "\n".join(parts)

    @property
    def has_decode(self) -> bool:
        """Whether the family has split-KV (`decode`) kernels: without a
        bias, a mask or packed sequences."""
        return not self.bias and not self.mask and not self.varlen


def common_variants():
    """What the package prebuilds: f16/bf16 x D 64/128 x causal or not,
    each with both backward forms (the atomic one is what the PyTorch op
    takes unless torch asks for deterministic algorithms)."""
    return [Variant.of(dt, d, causal=c, deterministic=det)
            for dt in DTYPES for d in (64, 128) for c in (False, True)
            for det in (True, False)]


# sm_90a causal calls with at most this many keys keep the deterministic
# pair: there it measured 1.05x the atomic kernel's fwd+bwd (bf16 D = 128
# and f16 D = 64 at 4k on an H100, two runs), while at 16k the atomic kernel
# is 1.05-1.16x and without a mask 1.11-1.16x at D = 128 (docs/GPU-NOTES.md
# 94). On sm_80 the atomic kernel is 1.10-1.14x the pair at 4k causal too.
CAUSAL_DETERMINISTIC_KEYS = 4096


def backward_variant(variant: Variant, deterministic: bool,
                     keys: Optional[int] = None,
                     chip: str = "sm_90a") -> Variant:
    """The variant whose train_backward kernel the PyTorch op launches for
    `variant`'s gradients over `keys` keys: the atomic form (FlashAttention-2's
    backward, dQ added with f32 atomics) unless `deterministic` (torch's
    use_deterministic_algorithms) asks for bitwise reproducible gradients,
    only for the variants it was measured on (no bias, mask, window, sinks
    or softcap; head dims multiples of 64, for the atomic kernels'
    fragment-major sums; packed sequences only without a causal mask: their
    sums stay in rows, and causal ones measured 1.06-1.11x faster as the
    pair), and on sm_90a not for causal calls of at most
    CAUSAL_DETERMINISTIC_KEYS keys, where the pair measured faster."""
    plain = (not variant.bias and not variant.mask and variant.window is None
             and not variant.sinks and variant.softcap_bits is None
             and variant.kv_cache is None
             and not (variant.varlen and variant.causal)
             and variant.head_dim % 64 == 0 and variant.value_dim % 64 == 0)
    short_causal = (chip == "sm_90a" and variant.causal and keys is not None
                    and keys <= CAUSAL_DETERMINISTIC_KEYS)
    return dataclasses.replace(
        variant, deterministic=deterministic or not plain or short_causal)


# The variants beyond the common set that flash_mlir.torch_check uses.
CHECK_VARIANTS = ("bf16:d64:causal:w48", "bf16:d64:scale=0.3",
                  "bf16:d64:bias=f32", "bf16:d64:mask", "f16:d64:dv128:causal",
                  "bf16:d64:causal:sinks", "bf16:d64:causal:w48:sinks",
                  "f16:d128:mask:sinks")


# The variants of flash_mlir.torch_serving_check (packed sequences and KV
# caches; with grouped query heads a decode call packs them, drops causal
# and folds the sinks in afterwards, so the plain variants too).
SERVING_CHECK_VARIANTS = tuple(
    [f"{dt}:d{d}:{mode}varlen" for dt in DTYPES for d in (64, 128)
     for mode in ("", "causal:", "causal:w48:sinks:")] +
    [f"bf16:d{d}:{mode}{cache}" for d, cache, modes in (
        (128, "kvcache", ("", "causal:w100:sinks:")),
        (128, "paged=64", ("", "causal:", "causal:w100:sinks:")),
        (128, "paged=128", ("", "causal:w100:sinks:")),
        (64, "paged=16", ("", "causal:", "causal:w100:sinks:")))
     for mode in modes] +
    ["bf16:d128:causal:softcap=30", "bf16:d128:causal:softcap=30:varlen",
     "bf16:d128:softcap=30:paged=64", "bf16:d64:causal:sinks:paged=16",
     "bf16:d128:causal:sinks:paged=64", "bf16:d128"])


class KernelNotFound(RuntimeError):
    pass


def find_tool(name, env):
    """A flash-mlir tool: $ENV, PATH, or this checkout's build directory."""
    path = os.environ.get(env)
    if path:
        return path if os.access(path, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    here = os.path.dirname(os.path.abspath(__file__))
    local = os.path.normpath(os.path.join(here, "..", "..", "build", "bin", name))
    return local if os.access(local, os.X_OK) else None


def find_compiler():
    """flash-compile: $FLASH_COMPILE, PATH, or this checkout's build."""
    return find_tool("flash-compile", "FLASH_COMPILE")


def compiler_id(path) -> str:
    """The compiler's identity in cache keys: the package version and a hash
    of the flash-compile binary (a rebuilt compiler gets a new cache)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return f"{__version__}-{h.hexdigest()[:12]}"


def package_kernel_dir(chip):
    return os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "kernels", chip)


def cache_root():
    return os.environ.get("FLASH_MLIR_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "flash-mlir")


def compile_variants(variants, chip, out_dir, compiler, extra_args=()):
    """Compiles the families of `variants` into a temporary folder (one
    flash-compile run per backward form among them), then moves the files into `out_dir` (manifests last,
    so a reader never sees a manifest whose images are missing) and records
    them in out_dir/index.json."""
    if chip not in CHIPS:
        raise ValueError(f"chip {chip!r} is not one of {', '.join(CHIPS)}")
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".build-") as tmp:
        built = os.path.join(tmp, "out")
        # One flash-compile run per backward form (--deterministic is a
        # run's option, not a function's).
        for deterministic in (True, False):
            group = [v for v in variants if v.deterministic == deterministic]
            if not group:
                continue
            src = os.path.join(tmp, f"variants_{int(deterministic)}.mlir")
            with open(src, "w") as f:
                f.write("\n".join(v.mlir() for v in group))
            cmd = [compiler, src, "--chip", chip, "-o", built, *extra_args]
            if not deterministic:
                cmd.append("--deterministic=false")
            run = subprocess.run(cmd, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
            if run.returncode != 0:
                raise RuntimeError(f"flash-compile failed ({' '.join(cmd)}):\n"
                                   f"{run.stdout}")
        names = sorted(os.listdir(built))
        for name in [n for n in names if not n.endswith(".json")] + \
                [n for n in names if n.endswith(".json")]:
            os.replace(os.path.join(built, name), os.path.join(out_dir, name))
    _record(out_dir, variants, chip, compiler)


def _record(out_dir, variants, chip, compiler):
    path = os.path.join(out_dir, "index.json")
    index = {"chip": chip, "compiler": compiler_id(compiler), "variants": {}}
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        if old.get("chip") == chip:
            index["variants"] = old.get("variants", {})
    for v in variants:
        index["variants"][v.base] = v.spec()
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(index, f, indent=2, sort_keys=True)
    os.replace(tmp, path)


@contextlib.contextmanager
def _locked(directory):
    import fcntl
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class KernelCache:
    """Where a variant's kernels are, or how they get there."""

    def __init__(self, chip, search_dirs=None, compiler=None,
                 cache_dir=None):
        if chip not in CHIPS:
            raise ValueError(f"chip {chip!r} is not one of {', '.join(CHIPS)}")
        self.chip = chip
        if search_dirs is None:
            env = os.environ.get("FLASH_MLIR_KERNELS", "")
            search_dirs = [d for d in env.split(os.pathsep) if d]
            search_dirs.append(package_kernel_dir(chip))
        self.search_dirs = list(search_dirs)
        self.compiler = find_compiler() if compiler is None else (compiler or None)
        if cache_dir is None:
            root = cache_root()
            if self.compiler:
                cache_dir = os.path.join(root, compiler_id(self.compiler), chip)
        self.cache_dir = cache_dir

    def _lookup(self, name):
        dirs = list(self.search_dirs)
        if self.cache_dir:
            dirs.append(self.cache_dir)
        elif os.path.isdir(cache_root()):
            # No compiler here: kernels an earlier compiler left in the
            # cache are as good as prebuilt ones (newest first).
            builds = [os.path.join(cache_root(), b, self.chip)
                      for b in os.listdir(cache_root())]
            dirs += sorted((d for d in builds if os.path.isdir(d)),
                           key=os.path.getmtime, reverse=True)
        for d in dirs:
            path = os.path.join(d, name + ".json")
            if os.path.exists(path):
                with open(path) as f:
                    if json.load(f).get("chip") == self.chip:
                        return path
        return None

    def manifest(self, variant: Variant, kind: str) -> str:
        """The manifest path of `variant`'s `kind` kernel, compiling the
        family on a miss."""
        name = variant.kernel(kind)
        found = self._lookup(name)
        if found:
            return found
        if not self.compiler:
            raise KernelNotFound(self.missing_message(variant, kind))
        with _locked(self.cache_dir):
            found = self._lookup(name)  # another process may have built it
            if not found:
                compile_variants([variant], self.chip, self.cache_dir,
                                 self.compiler)
                found = self._lookup(name)
        if not found:
            raise KernelNotFound(f"flash-compile ran but wrote no {name}.json "
                                 f"into {self.cache_dir}")
        return found

    def missing_message(self, variant, kind):
        where = ", ".join(self.search_dirs) or "(none)"
        return (f"no {kind} kernel for variant {variant.spec()} "
                f"({variant.describe()}) on {self.chip} in {where}, and "
                "flash-compile is not installed here (set FLASH_COMPILE or put "
                "it on PATH). Build the kernels where flash-mlir is built:\n"
                f"    python -m flash_mlir.kernels --chip {self.chip} -o DIR "
                f"{variant.spec()}\n"
                "and point FLASH_MLIR_KERNELS at DIR here.")


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m flash_mlir.kernels",
        description="Prebuild attention kernel variants with flash-compile.")
    ap.add_argument("variants", nargs="*",
                    help="variants such as bf16:d128:causal, f16:d64:w256, "
                         "bf16:d128:bias=f32:mask, f16:d64:scale=0.1")
    ap.add_argument("--common", action="store_true",
                    help="the common set: f16/bf16 x D 64/128 x causal or not")
    ap.add_argument("--check-set", action="store_true",
                    help="also the variants flash_mlir.torch_check uses (and "
                         "the atomic backward forms the op takes for them)")
    ap.add_argument("--serving-set", action="store_true",
                    help="also the variants flash_mlir.torch_serving_check "
                         "uses (packed sequences, KV caches)")
    ap.add_argument("--chip", default="sm_90a", choices=CHIPS)
    ap.add_argument("-o", "--output", help="output directory (default: the "
                    "package's flash_mlir/kernels/<chip>)")
    ap.add_argument("--flash-compile", dest="compiler", default=None)
    ap.add_argument("--print-mlir", action="store_true",
                    help="print the variants' MLIR and compile nothing")
    args = ap.parse_args(argv)
    try:
        variants = [Variant.parse(s) for s in args.variants]
    except ValueError as e:
        ap.error(str(e))
    if args.check_set:
        variants += [Variant.parse(s) for s in CHECK_VARIANTS]
    if args.serving_set:
        variants += [Variant.parse(s) for s in SERVING_CHECK_VARIANTS]
    if args.common or not variants:
        variants = common_variants() + variants
    if args.check_set or args.serving_set:
        # With the backward form the PyTorch op launches for each.
        variants += [backward_variant(v, False) for v in variants
                     if "train_backward" in v.kinds]
    variants = list(dict.fromkeys(variants))
    if args.print_mlir:
        print("\n".join(v.mlir() for v in variants))
        return 0
    compiler = args.compiler or find_compiler()
    if not compiler:
        print("error: flash-compile not found (set FLASH_COMPILE or "
              "--flash-compile)", file=sys.stderr)
        return 1
    out = args.output or package_kernel_dir(args.chip)
    try:
        compile_variants(variants, args.chip, out, compiler)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    kernels = sum(len(v.kinds) for v in variants)
    print(f"{len(variants)} variants ({kernels} kernels) for "
          f"{args.chip} in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
