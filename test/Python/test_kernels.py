"""flash_mlir.kernels: variant names, their MLIR, and the kernel cache
(lookup order, one compile per family, the error without a compiler)."""

import json
import os
import shutil
import stat
import subprocess
import tempfile
import unittest

from flash_mlir.region import find_flash_opt
from flash_mlir.kernels import (KernelCache, KernelNotFound, Variant, backward_variant,
                                common_variants, find_compiler)


class Variants(unittest.TestCase):
    def test_names_and_specs(self):
        v = Variant.of("bfloat16", 128, causal=True)
        self.assertEqual(v.base, "fm_bf16_d128_causal")
        self.assertEqual(v.kernel("train_backward"), "fm_bf16_d128_causal_train_backward")
        # The default scale spelled out is the default variant.
        self.assertEqual(Variant.of("bf16", 128, scale=128 ** -0.5), Variant.of("bf16", 128))
        w = Variant.of("float16", 64, 128, window=100, scale=0.1, bias="float32",
                       mask=True)
        self.assertEqual(w.base, "fm_f16_d64_dv128_w100_s3dcccccd_biasf32_mask")
        for variant in (v, w, Variant.of("f16", 16)):
            self.assertEqual(Variant.parse(variant.spec()), variant)
        self.assertEqual(Variant.parse("f16:d64:scale=0.1"), Variant.of("f16", 64, scale=0.1))
        s = Variant.of("bfloat16", 64, causal=True, window=128, sinks=True)
        self.assertEqual(s.base, "fm_bf16_d64_causal_w128_sinks")
        self.assertEqual(Variant.parse(s.spec()), s)
        self.assertNotEqual(s, Variant.of("bf16", 64, causal=True, window=128))
        # f16/bf16 x D 64/128 x causal or not, each with both backward forms.
        self.assertEqual(len(set(common_variants())), 16)
        a = Variant.of("bf16", 128, causal=True, deterministic=False)
        self.assertEqual(a.base, "fm_bf16_d128_causal_atomic")
        self.assertEqual(a.spec(), "bf16:d128:causal:atomic")
        self.assertEqual(Variant.parse(a.spec()), a)
        self.assertNotEqual(a, v)
        # Its family is the train kernel and its backward: the forward
        # kernels are the deterministic family's.
        self.assertEqual(a.kinds, ("train", "train_backward"))
        with self.assertRaises(ValueError):
            a.kernel("fwd")

    def test_backward_variant(self):
        # The PyTorch op's backward: atomic for the plain dense variants
        # unless torch asks for deterministic algorithms.
        plain = Variant.of("bf16", 128, causal=True)
        self.assertEqual(backward_variant(plain, False),
                         Variant.of("bf16", 128, causal=True, deterministic=False))
        self.assertEqual(backward_variant(plain, True), plain)
        for kept in (Variant.of("bf16", 64, bias="f32"), Variant.of("f16", 64, mask=True),
                     Variant.of("bf16", 64, causal=True, window=48),
                     Variant.of("bf16", 64, sinks=True), Variant.of("bf16", 64, softcap=30.0),
                     Variant.of("bf16", 64, causal=True, varlen=True), Variant.of("f16", 80),
                     Variant.of("f16", 64, 96)):
            self.assertEqual(backward_variant(kept, False), kept, kept.spec())
        with self.assertRaises(ValueError):
            Variant.of("bf16", 64, kv_cache=64, deterministic=False)
        # Causal calls over few keys keep the pair (measured faster there).
        self.assertEqual(backward_variant(plain, False, keys=4096), plain)
        self.assertFalse(backward_variant(plain, False, keys=4097).deterministic)
        # On sm_80 the atomic kernel measured faster there too.
        self.assertFalse(backward_variant(plain, False, keys=4096,
                                          chip="sm_80").deterministic)
        dense = Variant.of("f16", 64)
        self.assertFalse(backward_variant(dense, False, keys=1024).deterministic)
        # Packed sequences without a causal mask take the atomic form too.
        packed = Variant.of("bf16", 128, varlen=True)
        self.assertEqual(backward_variant(packed, False).base,
                         "fm_bf16_d128_varlen_atomic")
        self.assertEqual(backward_variant(packed, True), packed)

    def test_bad_variants(self):
        for bad in ("f32:d64", "bf16:d72", "bf16", "bf16:d64:foo", "bf16:d64:bias=i8",
                    "bf16:d512"):
            with self.assertRaises(ValueError, msg=bad):
                Variant.parse(bad)

    def test_mlir_parses(self):
        # Every family's source is valid flash IR (flash-opt verifies it).
        text = "\n".join(v.mlir() for v in common_variants() + [
            Variant.parse("f16:d64:dv128:causal:w100:scale=0.1:bias=bf16:mask"),
            Variant.parse("bf16:d64:causal:sinks")])
        opt = find_flash_opt()
        self.assertIsNotNone(opt, "flash-opt not on PATH")
        run = subprocess.run([opt, "-"], input=text, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("scale = 1.000000e-01 : f32", run.stdout)
        # The 8 deterministic families, the 8 atomic ones (train only) and
        # the two others.
        self.assertEqual(run.stdout.count("flash.attention_backward"), 18)
        # The forward takes the sinks (and the split-KV forward); the
        # backward needs none.
        self.assertEqual(run.stdout.count("sinks(%arg3 : tensor<?xf32>)"), 3)
        # A split-KV function in every family without a bias or mask.
        self.assertEqual(run.stdout.count("attributes {flash.key_splits}"), 9)

    def test_serving_variants(self):
        v = Variant.parse("bf16:d128:causal:varlen")
        self.assertEqual(v, Variant.of("bfloat16", 128, causal=True, varlen=True))
        self.assertEqual(v.base, "fm_bf16_d128_causal_varlen")
        self.assertEqual(v.kinds, ("fwd", "train", "train_backward"))
        with self.assertRaisesRegex(ValueError, "decode"):
            v.kernel("decode")
        c = Variant.parse("bf16:d128:kvcache:sinks")
        self.assertEqual((c.base, c.kv_cache, c.kinds),
                         ("fm_bf16_d128_sinks_kvcache", 0, ("fwd", "decode")))
        p = Variant.parse("f16:d64:causal:paged=64")
        self.assertEqual((p.base, p.kv_cache), ("fm_f16_d64_causal_paged64", 64))
        for variant in (v, c, p):
            self.assertEqual(Variant.parse(variant.spec()), variant)
        self.assertNotEqual(p, Variant.parse("f16:d64:causal:kvcache"))
        for bad in ("bf16:d64:varlen:kvcache", "bf16:d64:varlen:mask",
                    "bf16:d64:kvcache:bias=f32", "bf16:d64:paged=24",
                    "bf16:d64:paged=512"):
            with self.assertRaises(ValueError, msg=bad):
                Variant.parse(bad)

    def test_softcap(self):
        v = Variant.of("bf16", 128, causal=True, softcap=30.0)
        self.assertEqual(v.base, "fm_bf16_d128_causal_cap41f00000")
        self.assertEqual(v.spec(), "bf16:d128:causal:softcap=0x41f00000")
        self.assertEqual(Variant.parse("bf16:d128:causal:softcap=30"), v)
        self.assertEqual(v.softcap, 30.0)
        for bad in ("bf16:d64:softcap=0", "bf16:d64:softcap=-2",
                    "bf16:d64:softcap=inf"):
            with self.assertRaises(ValueError, msg=bad):
                Variant.parse(bad)
        # Each function's ops (forward and backward) carry the region.
        text = v.mlir() + Variant.parse("f16:d64:softcap=20:varlen").mlir()
        opt = find_flash_opt()
        run = subprocess.run([opt, "-"], input=text, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.count("math.tanh"), 7)
        self.assertEqual(run.stdout.count("arith.constant 3.000000e+01 : f32"), 4)

    def test_serving_mlir_parses(self):
        # The families' functions: varlen with the offsets in the forward
        # and the backward; a cache's forward and split-KV forward, each
        # with O and LSE, paged K/V keeping their page size.
        text = "\n".join(Variant.parse(s).mlir() for s in (
            "bf16:d128:causal:varlen", "f16:d64:w32:sinks:varlen",
            "bf16:d128:kvcache", "bf16:d64:causal:sinks:paged=64"))
        opt = find_flash_opt()
        self.assertIsNotNone(opt, "flash-opt not on PATH")
        run = subprocess.run([opt, "-"], input=text, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(run.returncode, 0, run.stderr)
        out = run.stdout
        self.assertEqual(out.count("flash.attention_backward"), 2)
        self.assertEqual(out.count("cu_seqlens_k("), 6)
        self.assertEqual(out.count("key_lengths("), 4)
        self.assertEqual(out.count("block_table("), 2)
        self.assertEqual(out.count("tensor<?x?x64x64xbf16>, tensor<?x?x64x64xbf16> ->"), 2)
        self.assertEqual(out.count("attributes {flash.key_splits}"), 2)

    def test_decode_kind(self):
        self.assertEqual(Variant.parse("bf16:d128").kernel("decode"),
                         "fm_bf16_d128_decode")
        self.assertTrue(Variant.parse("bf16:d64:causal:w48:sinks").has_decode)
        self.assertFalse(Variant.parse("bf16:d64:mask").has_decode)
        self.assertFalse(Variant.parse("bf16:d64:bias=f32").has_decode)
        self.assertNotIn("decode", Variant.parse("bf16:d64:mask").mlir())


class Cache(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_missing_without_compiler(self):
        cache = KernelCache("sm_90a", search_dirs=[self.tmp], compiler="",
                            cache_dir=os.path.join(self.tmp, "cache"))
        v = Variant.of("bf16", 128, causal=True)
        with self.assertRaises(KernelNotFound) as cm:
            cache.manifest(v, "fwd")
        msg = str(cm.exception)
        self.assertIn("bf16:d128:causal", msg)
        self.assertIn("python -m flash_mlir.kernels --chip sm_90a -o DIR bf16:d128:causal", msg)
        self.assertIn("FLASH_MLIR_KERNELS", msg)

    def test_compile_once_then_load(self):
        compiler = find_compiler()
        self.assertIsNotNone(compiler, "flash-compile not found")
        # A wrapper that counts its runs.
        log = os.path.join(self.tmp, "runs")
        wrapper = os.path.join(self.tmp, "flash-compile")
        with open(wrapper, "w") as f:
            f.write(f"#!/bin/sh\necho run >> {log}\nexec {compiler} \"$@\"\n")
        os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IEXEC)
        cache_dir = os.path.join(self.tmp, "cache")
        v = Variant.of("f16", 16, causal=True)
        cache = KernelCache("sm_80", search_dirs=[], compiler=wrapper,
                            cache_dir=cache_dir)
        fwd = cache.manifest(v, "fwd")
        bwd = KernelCache("sm_80", search_dirs=[], compiler=wrapper,
                          cache_dir=cache_dir).manifest(v, "train_backward")
        with open(log) as f:
            self.assertEqual(f.read().count("run"), 1)
        with open(fwd) as f:
            man = json.load(f)
        self.assertEqual((man["kernel"], man["chip"], man["causal"], man["head_dim"]),
                         ("fm_f16_d16_causal_fwd", "sm_80", True, 16))
        with open(bwd) as f:
            self.assertEqual(json.load(f)["kind"], "backward")
        self.assertTrue(os.path.exists(os.path.join(cache_dir, man["ptx"])))
        with open(os.path.join(cache_dir, "index.json")) as f:
            index = json.load(f)
        self.assertEqual(index["variants"], {"fm_f16_d16_causal": "f16:d16:causal"})
        # Without a compiler, what the cache holds is still found; search
        # directories come first; a kernel for another chip is not taken.
        self.assertEqual(KernelCache("sm_80", search_dirs=[], compiler="",
                                     cache_dir=cache_dir).manifest(v, "train"),
                         os.path.join(cache_dir, "fm_f16_d16_causal_train.json"))
        self.assertEqual(KernelCache("sm_80", search_dirs=[cache_dir], compiler="",
                                     cache_dir=self.tmp).manifest(v, "fwd"), fwd)
        with self.assertRaises(KernelNotFound):
            KernelCache("sm_90a", search_dirs=[cache_dir], compiler="",
                        cache_dir=self.tmp).manifest(v, "fwd")


if __name__ == "__main__":
    unittest.main()
