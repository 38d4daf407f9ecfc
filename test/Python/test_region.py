"""flash_mlir.region: attention written as PyTorch writes it by hand, as a
region of one linalg op per torch op, is recognised by the compiler's own
matcher (flash-opt --flash-fuse-attention) and read back; the exported
linalg computes what the fused op computes (fusion_check on the CPU); the
answers are cached for machines without flash-opt."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from flash_mlir.region import (Node, Region, Unsupported, answer_pending,
                               ask_compiler, find_flash_opt)


def handwritten(b=1, h=2, hkv=2, m=16, n=16, d=8, dt="bfloat16", mask="tril",
                bias=False, scale_op="div", repeat=None):
    """q @ k.transpose(-1, -2) / sqrt(d) [+ bias], masked_fill(~tril(ones))
    or masked_fill(~mask) with -inf, softmax(float32), .to(dt), @ v: the
    GPT-style spelling (nanoGPT, minGPT) of attention."""
    nodes = [Node("q", "input", [], (b, h, m, d), dt),
             Node("k", "input", [], (b, hkv, n, d), dt),
             Node("v", "input", [], (b, hkv, n, d), dt)]
    if bias:
        nodes.append(Node("bias", "input", [], (m, n), "float32"))
    if mask == "input":
        nodes.append(Node("mask", "input", [], (b, 1, m, n), "bool"))
    key, value = "k", "v"
    if repeat == "repeat_kv":  # Llama's repeat_kv: [:, :, None] .expand .reshape
        g = h // hkv
        for x in ("k", "v"):
            nodes += [Node(x + "1", "reshape", [x], (b, hkv, 1, n, d), dt),
                      Node(x + "2", "expand", [x + "1"], (b, hkv, g, n, d), dt),
                      Node(x + "3", "reshape", [x + "2"], (b, h, n, d), dt)]
        key, value = "k3", "v3"
    elif repeat == "repeat_interleave":
        for x in ("k", "v"):
            nodes.append(Node(x + "r", "repeat_interleave", [x], (b, h, n, d), dt,
                              {"dim": 1, "repeats": h // hkv}))
        key, value = "kr", "vr"
    nodes += [Node("kt", "transpose", [key], (b, h if repeat else hkv, d, n), dt,
                   {"dim0": -1, "dim1": -2}),
              Node("s", "matmul", ["q", "kt"], (b, h, m, n), dt),
              Node("sd", "scale", ["s"], (b, h, m, n), dt,
                   {"op": scale_op, "value": d ** 0.5 if scale_op == "div" else d ** -0.5})]
    last = "sd"
    if bias:
        nodes.append(Node("sb", "add", [last, "bias"], (b, h, m, n), "float32"))
        last = "sb"
    sdt = "float32" if bias else dt
    if mask == "tril":
        nodes += [Node("ones", "ones", [], (m, n), "bool"),
                  Node("tril", "tril", ["ones"], (m, n), "bool"),
                  Node("hide", "not", ["tril"], (m, n), "bool")]
    if mask == "input":
        nodes.append(Node("hide", "not", ["mask"], (b, 1, m, n), "bool"))
    if mask:
        nodes.append(Node("mf", "masked_fill", [last, "hide"], (b, h, m, n), sdt,
                          {"value": float("-inf")}))
        last = "mf"
    nodes += [Node("f", "convert", [last], (b, h, m, n), "float32"),
              Node("p", "softmax", ["f"], (b, h, m, n), "float32", {"dim": -1}),
              Node("pb", "convert", ["p"], (b, h, m, n), dt),
              Node("o", "matmul", ["pb", value], (b, h, m, d), dt)]
    return Region(nodes, "o")


class Regions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.flash_opt = find_flash_opt()
        self.assertIsNotNone(self.flash_opt, "flash-opt not found")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def ask(self, region):
        return ask_compiler(region, self.flash_opt, self.tmp)

    def test_causal_tril(self):
        f = self.ask(handwritten())
        self.assertTrue(f.fused, f.reason)
        self.assertEqual((f.query, f.key, f.value, f.bias, f.mask, f.causal, f.window),
                         (0, 1, 2, None, None, True, None))
        self.assertAlmostEqual(f.scale, 8 ** -0.5, places=6)

    def test_no_mask_and_multiplied_scale(self):
        f = self.ask(handwritten(mask=None, scale_op="mul", d=16))
        self.assertTrue(f.fused, f.reason)
        self.assertFalse(f.causal)
        self.assertAlmostEqual(f.scale, 0.25, places=6)

    def test_bias_and_mask_inputs(self):
        f = self.ask(handwritten(mask="input", bias=True))
        self.assertTrue(f.fused, f.reason)
        self.assertEqual((f.bias, f.mask, f.causal), (3, 4, False))

    def test_grouped_heads_repeated(self):
        # GQA as Llama (repeat_kv) and as torch.repeat_interleave write it.
        for repeat in ("repeat_kv", "repeat_interleave"):
            f = self.ask(handwritten(h=4, hkv=2, repeat=repeat))
            self.assertTrue(f.fused, f"{repeat}: {f.reason}")
            self.assertEqual((f.query, f.key, f.value, f.causal), (0, 1, 2, True))

    def test_top_left_tril_is_not_bottom_right(self):
        # torch.tril(ones(M, N)) with M != N keeps j <= i: top-left, which is
        # not flash.attention's causal; the compiler says so.
        f = self.ask(handwritten(m=8, n=16))
        self.assertFalse(f.fused)
        self.assertIn("bottom-right", f.reason)

    def test_unsupported(self):
        r = handwritten()
        r.nodes[0].shape = (1, 2, -1, 8)
        with self.assertRaises(Unsupported):
            r.to_mlir()
        r.nodes[0].shape = (1, 2, "s0 + 1", 8)  # a sum of sizes
        with self.assertRaises(Unsupported):
            r.to_mlir()

    def test_rank3_bmm(self):
        # bmm-style code on [B*H, S, D]: the compiler lifts the fused op to
        # rank 4 with views, read back as the op on the region's inputs.
        dt = "bfloat16"
        r = Region([Node("k", "input", [], (6, 20, 8), dt),
                    Node("q", "input", [], (6, 16, 8), dt),
                    Node("v", "input", [], (6, 20, 8), dt),
                    Node("kt", "transpose", ["k"], (6, 8, 20), dt, {"dim0": 1, "dim1": 2}),
                    Node("s", "matmul", ["q", "kt"], (6, 16, 20), dt),
                    Node("w", "scale", ["s"], (6, 16, 20), dt, {"op": "mul", "value": 0.125}),
                    Node("p", "softmax", ["w"], (6, 16, 20), dt, {"dim": -1}),
                    Node("o", "matmul", ["p", "v"], (6, 16, 8), dt)], "o")
        f = self.ask(r)
        self.assertTrue(f.fused, f.reason)
        self.assertEqual((f.query, f.key, f.value, f.causal, f.scale), (1, 0, 2, False, 0.125))
        # With dynamic sizes the views keep tensor.dim of the inputs.
        for n in r.nodes:
            n.shape = tuple({6: "s0", 16: "s1", 20: "s2"}.get(x, x) for x in n.shape)
        f = self.ask(r)
        self.assertTrue(f.fused, f.reason)
        self.assertEqual((f.query, f.key, f.value), (1, 0, 2))

    def test_dynamic_sizes(self):
        # torch.compile's symbolic sizes: `?` in the types, the symbols in
        # flash.sizes, so that a causal tril on M = N = s0 is provably
        # bottom-right; on two symbols it is not.
        text = handwritten(b="s1", m="s0", n="s0").to_mlir()
        self.assertIn('tensor<?x2x?x8xbf16> {flash.sizes = ["s1", 2, "s0", 8]}', text)
        for kw in ({}, {"h": 4, "hkv": 2, "repeat": "repeat_kv"},
                   {"h": 4, "hkv": 2, "repeat": "repeat_interleave"}):
            f = self.ask(handwritten(b="s1", m="s0", n="s0", **kw))
            self.assertTrue(f.fused, f"{kw}: {f.reason}")
            self.assertTrue(f.causal)
        f = self.ask(handwritten(b="s1", m="s0", n="s2"))
        self.assertFalse(f.fused)
        self.assertIn("bottom-right", f.reason)
        f = self.ask(handwritten(b="2*s1", m="s0", n="s2", mask="input", bias=True))
        self.assertTrue(f.fused, f.reason)
        self.assertEqual((f.bias, f.mask, f.causal), (3, 4, False))

    def test_cache_and_pending(self):
        r = handwritten()
        self.assertTrue(self.ask(r).fused)
        # Answered from the cache without flash-opt.
        self.assertTrue(ask_compiler(r, False, self.tmp).fused)
        other = os.path.join(self.tmp, "other")
        f = ask_compiler(r, False, other)
        self.assertFalse(f.fused)
        self.assertIn("python -m flash_mlir.region", f.reason)
        self.assertEqual(answer_pending(other, self.flash_opt), 1)
        self.assertTrue(ask_compiler(r, False, other).fused)

    def test_exported_region_runs_like_the_fused_op(self):
        # The exported linalg (unfused) and flash.attention agree on the CPU.
        path = os.path.join(self.tmp, "regions.mlir")
        with open(path, "w") as f:
            f.write(handwritten(m=24, n=24, dt="float32").to_mlir())
            f.write("// -----\n")
            f.write(handwritten(mask="input", bias=True, dt="float32").to_mlir())
            f.write("// -----\n")
            f.write(handwritten(b="s1", m="s0", n="s0", dt="float32").to_mlir())
        run = subprocess.run([sys.executable, "-m", "flash_mlir.fusion_check", path,
                              "--expect", "fused"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        self.assertEqual(run.returncode, 0, run.stdout)


if __name__ == "__main__":
    unittest.main()
