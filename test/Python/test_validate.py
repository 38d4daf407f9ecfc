"""flash_mlir.validate: the checks that run before any launch. The bad calls
of the PyTorch issue (each launched without a word before the checks
existed) and more; each must raise the right error naming the tensor."""

import unittest

from flash_mlir.validate import (TensorInfo, check_attention, check_backward,
                                 check_launch, choose_key_splits,
                                 companion_manifests, grid_size, launch_grid,
                                 wants_key_splits, takes_split_kernel,
                                 workspace_infos,
                                 workspace_shape,
                                 query_head_packing, rows_aligned,
                                 inner_stride_unit, takes_persistent_form,
                                 check_varlen, check_varlen_backward,
                                 check_kvcache, packed_view, check_softcap)


def t(name, shape, dtype="bfloat16", device="cuda:0", strides=None, ptr=256):
    if strides is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.insert(0, acc)
            acc *= s
    return TensorInfo(name, tuple(shape), tuple(strides), dtype, device, ptr)


def qkv(b=2, hq=4, hkv=4, m=100, n=130, d=128, dv=128, dtype="bfloat16"):
    return (t("q", (b, hq, m, d), dtype), t("k", (b, hkv, n, d), dtype),
            t("v", (b, hkv, n, dv), dtype))


def param(name, dtype, rank=4, last=None):
    shape = [None] * rank
    if last is not None:
        shape[-1] = last
    return {"name": name, "dtype": dtype, "rank": rank, "shape": shape}


FORWARD = {"kernel": "attn_bf16_d128", "dtype": "bf16",
           "params": [param("q", "bf16", last=128), param("k", "bf16", last=128),
                      param("v", "bf16", last=128), param("o", "bf16", last=128)]}
BACKWARD = {"kernel": "train_bf16_d128_backward", "dtype": "bf16", "kind": "backward",
            "workspace": [{"name": "d", "like": "lse", "dtype": "f32"}],
            "launches": [{"params": [param("q", "bf16", last=128),
                                     param("do", "bf16", last=128),
                                     param("o", "bf16", last=128),
                                     param("k", "bf16", last=128),
                                     param("v", "bf16", last=128),
                                     param("lse", "f32", rank=3),
                                     param("dq", "bf16", last=128),
                                     param("d", "f32", rank=3)]},
                         {"params": [param("dk", "bf16", last=128),
                                     param("dv", "bf16", last=128)]}]}


class Forward(unittest.TestCase):
    def test_good(self):
        s = check_attention(*qkv(hq=8, hkv=2))
        self.assertEqual((s.group, s.output_shape(), s.lse_shape()),
                         (4, (2, 8, 100, 128), (2, 8, 100)))

    def assertRaisesNaming(self, error, name, *args, **kw):
        with self.assertRaises(error) as cm:
            check_attention(*args, **kw)
        self.assertTrue(str(cm.exception).startswith(name + ":"),
                        str(cm.exception))
        return str(cm.exception)

    def test_head_dim_of_k_or_v(self):
        q, k, v = qkv()
        msg = self.assertRaisesNaming(ValueError, "k", q, t("k", (2, 4, 130, 64)), v)
        self.assertIn("head dim", msg)
        self.assertIn("[2, 4, 130, 64]", msg)
        # Dv != D is legal (a value dim of its own) ...
        check_attention(q, k, t("v", (2, 4, 130, 64)))
        # ... but not one the kernels cannot take.
        self.assertRaisesNaming(ValueError, "v", q, k, t("v", (2, 4, 130, 72)))

    def test_q_float32(self):
        q, k, v = qkv()
        msg = self.assertRaisesNaming(TypeError, "q", t("q", q.shape, "float32"), k, v)
        self.assertIn("float32", msg)

    def test_k_other_dtype(self):
        q, k, v = qkv()
        self.assertRaisesNaming(TypeError, "k", q, t("k", k.shape, "float16"), v)

    def test_batch(self):
        q, k, v = qkv()
        msg = self.assertRaisesNaming(ValueError, "k", q, t("k", (3, 4, 130, 128)), v)
        self.assertIn("batch", msg)

    def test_heads_do_not_divide(self):
        q, _, _ = qkv()
        msg = self.assertRaisesNaming(ValueError, "k", q, t("k", (2, 3, 130, 128)),
                                      t("v", (2, 3, 130, 128)))
        self.assertIn("Hq % Hkv", msg)

    def test_v_longer_than_k(self):
        q, k, _ = qkv()
        msg = self.assertRaisesNaming(ValueError, "v", q, k, t("v", (2, 4, 131, 128)))
        self.assertIn("130", msg)

    def test_v_other_heads(self):
        q, k, _ = qkv()
        self.assertRaisesNaming(ValueError, "v", q, k, t("v", (2, 2, 130, 128)))

    def test_cpu_tensors(self):
        q, k, v = qkv()
        msg = self.assertRaisesNaming(ValueError, "q",
                                      t("q", q.shape, device="cpu"), k, v)
        self.assertIn("CUDA", msg)

    def test_two_devices(self):
        q, k, v = qkv()
        self.assertRaisesNaming(ValueError, "v", q, k, t("v", v.shape, device="cuda:1"))

    def test_rank(self):
        _, k, v = qkv()
        self.assertRaisesNaming(ValueError, "q", t("q", (4, 100, 128)), k, v)

    def test_not_a_tensor(self):
        _, k, v = qkv()
        with self.assertRaises(TypeError):
            check_attention([1, 2], k, v)

    def test_query_head_packing(self):
        # Decoding, Hq = 32 over Hkv = 8: Q [B, 32, 1, 128] as [B, 8, 4, 128].
        q, k, v = qkv(b=3, hq=32, hkv=8, m=1, n=8192)
        shape = check_attention(q, k, v)
        packed = query_head_packing(shape, [q], causal=True)
        self.assertEqual(packed["q"], ((3, 8, 4, 128), (32 * 128, 4 * 128, 128, 1)))
        self.assertEqual(packed["keys_from"], 0)
        # A window W: the one row sees the last W + 1 keys, unmasked.
        self.assertEqual(query_head_packing(shape, [q], True, 100)["keys_from"],
                         8192 - 101)
        self.assertEqual(query_head_packing(shape, [q], True, 9000)["keys_from"], 0)
        # [B, S, H, D] memory: heads are 128 apart, batches 32 * 128.
        bshd = t("q", (3, 32, 1, 128), strides=(32 * 128, 128, 32 * 128, 1))
        self.assertEqual(query_head_packing(shape, [bshd])["q"],
                         ((3, 8, 4, 128), (32 * 128, 4 * 128, 128, 1)))
        # M = 4 rows merge with the heads in [B, H, S, D] memory only, and
        # see different keys under a causal mask.
        q4, k4, v4 = qkv(b=2, hq=8, hkv=2, m=4, n=300)
        shape4 = check_attention(q4, k4, v4)
        self.assertEqual(query_head_packing(shape4, [q4])["q"],
                         ((2, 2, 16, 128), (8 * 4 * 128, 4 * 4 * 128, 128, 1)))
        self.assertIsNone(query_head_packing(shape4, [q4], causal=True))
        self.assertIsNone(query_head_packing(shape4, [q4], window=100))
        q4s = t("q", (2, 8, 4, 128), strides=(4 * 8 * 128, 128, 8 * 128, 1))
        self.assertIsNone(query_head_packing(shape4, [q4s]))
        # Not grouped, too many rows, a window or score operands: no packing.
        self.assertIsNone(query_head_packing(check_attention(*qkv(m=1)), [q]))
        q17, k17, v17 = qkv(hq=8, hkv=2, m=17)
        self.assertIsNone(query_head_packing(check_attention(q17, k17, v17), [q17]))
        self.assertIsNone(query_head_packing(shape, [q], score_operands=True))

    def test_sinks(self):
        q, k, v = qkv(hkv=2)
        for dtype in ("float32", "bfloat16", "float16"):
            check_attention(q, k, v, sinks=t("sinks", (4,), dtype))
        msg = self.assertRaisesNaming(ValueError, "sinks", q, k, v,
                                      sinks=t("sinks", (2,), "float32"))
        self.assertIn("one sink per query head", msg)
        self.assertRaisesNaming(ValueError, "sinks", q, k, v,
                                sinks=t("sinks", (1, 4), "float32"))
        self.assertRaisesNaming(TypeError, "sinks", q, k, v,
                                sinks=t("sinks", (4,), "int32"))
        self.assertRaisesNaming(ValueError, "sinks", q, k, v,
                                sinks=t("sinks", (4,), "float32", device="cpu"))

    def test_bias_and_mask(self):
        q, k, v = qkv()
        for shape in ((130,), (100, 130), (1, 4, 1, 130), (2, 1, 100, 130),
                      (2, 4, 100, 130)):
            check_attention(q, k, v, bias=t("bias", shape, "float32"),
                            mask=t("mask", shape, "bool"))
        msg = self.assertRaisesNaming(ValueError, "bias", q, k, v,
                                      bias=t("bias", (100, 129), "float32"))
        self.assertIn("broadcast", msg)
        self.assertRaisesNaming(ValueError, "bias", q, k, v,
                                bias=t("bias", (1, 2, 4, 100, 130), "float32"))
        self.assertRaisesNaming(TypeError, "bias", q, k, v,
                                bias=t("bias", (100, 130), "int32"))
        self.assertRaisesNaming(TypeError, "mask", q, k, v,
                                mask=t("mask", (100, 130), "float32"))
        self.assertRaisesNaming(ValueError, "mask", q, k, v,
                                mask=t("mask", (3, 1, 100, 130), "bool"))
        self.assertRaisesNaming(ValueError, "mask", q, k, v,
                                mask=t("mask", (100, 130), "bool", device="cpu"))

    def test_scale_and_window(self):
        q, k, v = qkv()
        check_attention(q, k, v, scale=0.1, window=0)
        self.assertRaisesNaming(ValueError, "scale", q, k, v, scale=float("nan"))
        self.assertRaisesNaming(ValueError, "scale", q, k, v, scale=float("inf"))
        self.assertRaisesNaming(TypeError, "scale", q, k, v, scale="0.1")
        self.assertRaisesNaming(ValueError, "window", q, k, v, window=-1)
        self.assertRaisesNaming(ValueError, "window", q, k, v, window=2 ** 63 - 1)
        self.assertRaisesNaming(TypeError, "window", q, k, v, window=1.5)


class Launch(unittest.TestCase):
    def good(self, **over):
        q, k, v = qkv()
        tensors = dict(q=q, k=k, v=v, o=t("o", (2, 4, 100, 128)))
        tensors.update(over)
        return tensors

    def assertLaunchRaises(self, error, name, manifest, tensors):
        with self.assertRaises(error) as cm:
            check_launch(manifest, tensors)
        self.assertTrue(str(cm.exception).startswith(name + ":"),
                        str(cm.exception))

    def test_good(self):
        check_launch(FORWARD, self.good())

    def test_o_float16(self):
        self.assertLaunchRaises(TypeError, "o", FORWARD,
                                self.good(o=t("o", (2, 4, 100, 128), "float16")))

    def test_o_half_the_rows(self):
        self.assertLaunchRaises(ValueError, "o", FORWARD,
                                self.good(o=t("o", (2, 4, 50, 128))))

    def test_head_dim_not_compiled(self):
        q, k, v = qkv(d=64, dv=64)
        self.assertLaunchRaises(ValueError, "q", FORWARD,
                                dict(q=q, k=k, v=v, o=t("o", (2, 4, 100, 64))))

    def test_kv_cache(self):
        # Ragged and paged caches: key_lengths [B], pages [P, Hkv, 64, D].
        paged = {"kernel": "paged", "dtype": "bf16",
                 "params": FORWARD["params"] + [param("key_lengths", "i32", rank=1),
                                                param("block_table", "i32", rank=2)]}
        q = t("q", (2, 4, 1, 128))
        pages = t("k", (9, 4, 64, 128)), t("v", (9, 4, 64, 128))
        good = dict(q=q, k=pages[0], v=pages[1], o=t("o", (2, 4, 1, 128)),
                    key_lengths=t("key_lengths", (2,), "int32"),
                    block_table=t("block_table", (2, 4), "int32"))
        check_launch(paged, good)
        self.assertLaunchRaises(TypeError, "key_lengths", paged,
                                dict(good, key_lengths=t("key_lengths", (2,), "int64")))
        self.assertLaunchRaises(ValueError, "block_table", paged,
                                dict(good, block_table=t("block_table", (3, 4), "int32")))
        self.assertLaunchRaises(ValueError, "key_lengths", paged,
                                dict(good, key_lengths=t("key_lengths", (3,), "int32")))

    def test_packed(self):
        # Packed sequences: a batch of one, offsets [S + 1], seqused_k [S].
        packed = {"kernel": "prefill", "dtype": "bf16",
                  "params": FORWARD["params"] + [param("cu_seqlens_q", "i32", rank=1),
                                                 param("cu_seqlens_k", "i32", rank=1)]}
        q, k, v = qkv(b=1)
        good = dict(q=q, k=k, v=v, o=t("o", (1, 4, 100, 128)),
                    cu_seqlens_q=t("cu_seqlens_q", (5,), "int32"),
                    cu_seqlens_k=t("cu_seqlens_k", (5,), "int32"))
        check_launch(packed, good)
        self.assertLaunchRaises(ValueError, "cu_seqlens_k", packed,
                                dict(good, cu_seqlens_k=t("cu_seqlens_k", (4,), "int32")))
        q2, k2, v2 = qkv()
        self.assertLaunchRaises(ValueError, "q", packed,
                                dict(good, q=q2, k=k2, v=v2, o=t("o", (2, 4, 100, 128))))

    def test_missing_and_unknown(self):
        tensors = self.good()
        del tensors["o"]
        with self.assertRaises(ValueError):
            check_launch(FORWARD, tensors)
        with self.assertRaises(ValueError):
            check_launch(FORWARD, self.good(lse=t("lse", (2, 4, 100), "float32")))

    def test_backward(self):
        q, k, v = qkv(hq=8, hkv=2)
        good = dict(q=q, k=k, v=v, o=t("o", (2, 8, 100, 128)),
                    do=t("do", (2, 8, 100, 128)),
                    lse=t("lse", (2, 8, 100), "float32"),
                    dq=t("dq", q.shape), dk=t("dk", k.shape), dv=t("dv", v.shape))
        check_launch(BACKWARD, good)
        for name, bad, error in (
                ("lse", t("lse", (2, 8, 99), "float32"), ValueError),
                ("lse", t("lse", (2, 8, 100), "bfloat16"), TypeError),
                ("do", t("do", (2, 8, 100, 128), "float16"), TypeError),
                ("dk", t("dk", (2, 8, 130, 128)), ValueError),
                ("dv", t("dv", (2, 2, 130, 128), device="cpu"), ValueError)):
            self.assertLaunchRaises(error, name, BACKWARD, dict(good, **{name: bad}))

    def test_check_backward(self):
        q, k, v = qkv()
        o = t("output", (2, 4, 100, 128))
        with self.assertRaises(ValueError):
            check_backward(t("grad_output", (2, 4, 100, 64)), q, k, v, o,
                           t("lse", (2, 4, 100), "float32"))


class Strides(unittest.TestCase):
    def test_rows_aligned(self):
        self.assertTrue(rows_aligned(t("q", (2, 4, 100, 128))))
        # A [B, S, H, D] view is still aligned row by row.
        self.assertTrue(rows_aligned(t("q", (2, 4, 100, 128),
                                       strides=(51200, 128, 512, 1))))
        self.assertFalse(rows_aligned(t("q", (2, 4, 100, 128), ptr=258)))
        self.assertFalse(rows_aligned(t("q", (2, 4, 100, 128),
                                        strides=(51200, 12800, 128, 2))))
        self.assertFalse(rows_aligned(t("q", (2, 4, 100, 60),
                                        strides=(24000, 6000, 60, 1))))
        # Broadcast dims (stride 0) keep the fast path.
        self.assertTrue(rows_aligned(t("bias", (2, 4, 100, 128), "float32",
                                       strides=(0, 0, 128, 1))))

    def test_lse_needs_a_unit_inner_stride_only(self):
        # [B, H, M] with odd M and an odd start: fine; a [B, M, H] view: not.
        self.assertTrue(inner_stride_unit(t("lse", (2, 4, 101), "float32",
                                            ptr=260)))
        self.assertFalse(inner_stride_unit(t("lse", (2, 4, 101), "float32",
                                             strides=(404, 1, 4))))


class PersistentGrid(unittest.TestCase):
    """A persistent kernel's CTAs walk the tiles: the runtime launches at
    most as many as stay resident, along x; other kernels their grid."""

    def test_plain_kernel_keeps_its_grid(self):
        self.assertEqual(launch_grid({}, (32, 16, 4), 132), (32, 16, 4))
        self.assertEqual(launch_grid({"persistent": False}, (32, 16, 4), 132),
                         (32, 16, 4))

    def test_persistent_kernel_takes_resident_ctas(self):
        entry = {"persistent": True}
        self.assertEqual(launch_grid(entry, (32, 16, 4), 132), (132, 1, 1))
        self.assertEqual(launch_grid(entry, (3, 2, 1), 132), (6, 1, 1))
        self.assertEqual(launch_grid(entry, (0, 16, 4), 132), (0, 1, 1))

    def test_no_resident_cta(self):
        with self.assertRaisesRegex(ValueError, "no CTA"):
            launch_grid({"persistent": True, "entry": "k"}, (32, 16, 4), 0)


class PersistentForm(unittest.TestCase):
    """A warp-specialised forward names its persistent form and the most
    keys it is launched for; longer key loops keep the kernel."""

    form = {"persistent_form": {"kernel": "k_persistent.json", "max_keys": 2048}}

    def test_few_keys_take_the_form(self):
        self.assertTrue(takes_persistent_form(self.form, 1))
        self.assertTrue(takes_persistent_form(self.form, 1024))
        self.assertTrue(takes_persistent_form(self.form, 2048))
        self.assertFalse(takes_persistent_form(self.form, 2049))
        self.assertFalse(takes_persistent_form(self.form, 16384))

    def test_causal_window_counts_its_loop(self):
        # A tile's loop under a causal window walks at most window +
        # block_rows keys, however long the sequence.
        window = {**self.form, "causal": True, "window": 512, "block_rows": 128}
        self.assertTrue(takes_persistent_form(window, 16384))
        self.assertTrue(takes_persistent_form(window, 1 << 20))
        wide = {**window, "window": 4096}
        self.assertFalse(takes_persistent_form(wide, 16384))
        self.assertTrue(takes_persistent_form(wide, 2048))
        # Without a causal mask a window bounds the loop from one side only.
        one_sided = {**window, "causal": False}
        self.assertFalse(takes_persistent_form(one_sided, 16384))
        self.assertFalse(takes_persistent_form({**window, "window": None}, 16384))

    def test_no_form_no_keys(self):
        self.assertFalse(takes_persistent_form({}, 1024))
        self.assertFalse(takes_persistent_form({"persistent_form": None}, 1024))
        self.assertFalse(takes_persistent_form(self.form, 0))

    def test_companions(self):
        manifests = [
            {"kernel": "a", "general": "a_general.json", **self.form},
            {"kernel": "a_general", "general": None},
            {"kernel": "b", "general": None, "persistent_form": None},
        ]
        self.assertEqual(companion_manifests(manifests),
                         {"a_general.json", "k_persistent.json"})


class KeySplits(unittest.TestCase):
    """Split-KV kernels: the runtime chooses the number of key runs, sizes
    the partial results after it and computes the grid from them."""

    man = {"key_splits": True, "block_rows": 128, "block_cols": 176,
           "workspace": [
               {"name": "o_split", "like": "o", "dtype": "f32", "splits": True},
               {"name": "lse_split", "like": "q", "like_dims": 3,
                "dtype": "f32", "splits": True}]}

    def test_full_gpu_takes_one_run(self):
        # 64 x 8 packed tiles fill 132 SMs: no split.
        self.assertEqual(choose_key_splits(self.man, 64, 8, 4, 32768, 132), 1)
        self.assertEqual(choose_key_splits(self.man, 16, 8, 4, 32768, 132), 1)

    def test_few_tiles_split_the_keys(self):
        # Batch 1, 8 KV heads: 8 tiles; a split count that fills the waves.
        # 187 key blocks of 176: 16 runs of 12 blocks on 128 CTAs (17 runs
        # would take a second wave).
        self.assertEqual(choose_key_splits(self.man, 1, 8, 4, 32768, 132), 16)
        # 47 blocks: 16 runs of 3 (14 runs, the most in one wave by CTA
        # count alone, take 4 blocks each).
        self.assertEqual(choose_key_splits(self.man, 1, 8, 4, 8192, 132), 16)
        # Batch 8: 64 tiles; 2 runs of 24 blocks on 128 CTAs; 4 runs of 12
        # take two waves, no shorter.
        self.assertEqual(choose_key_splits(self.man, 8, 8, 4, 8192, 132), 2)
        # 187 blocks at batch 8: 2 runs of 94 in one wave, not 47 runs of 4
        # in 23 waves (each CTA's fixed cost counts).
        self.assertEqual(choose_key_splits(self.man, 8, 8, 4, 32768, 132), 2)
        # 64-key blocks (a paged kernel's, two CTAs an SM): 16 runs of 8
        # blocks on 128 CTAs, not 32 runs of 4 sharing the SMs.
        paged = dict(self.man, block_rows=64, block_cols=64)
        self.assertEqual(choose_key_splits(paged, 1, 8, 4, 8192, 132), 16)
        self.assertEqual(choose_key_splits(paged, 1, 8, 4, 32768, 132), 16)
        # Runs of at least two key blocks: 1000 keys are 6 blocks, 3 runs.
        self.assertLessEqual(choose_key_splits(self.man, 1, 1, 1, 1000, 132), 3)
        self.assertEqual(choose_key_splits(self.man, 1, 1, 1, 100, 132), 1)
        self.assertLessEqual(
            choose_key_splits(self.man, 1, 1, 1, 1 << 20, 132), 64)

    def test_takes_split_kernel(self):
        # Few tiles: split (as wants_key_splits).
        self.assertTrue(takes_split_kernel(1, 8, 4, 8192, 132, 64))
        # 512 tiles of a decode step's 4 rows: the split kernel at one run,
        # its 64-row tile holding them.
        self.assertTrue(takes_split_kernel(64, 8, 4, 8192, 132, 64))
        # Prefill rows, or few keys: the plain forward.
        self.assertFalse(takes_split_kernel(64, 8, 512, 8192, 132, 64))
        self.assertFalse(takes_split_kernel(64, 8, 4, 1024, 132, 64))
        self.assertFalse(takes_split_kernel(64, 8, 0, 8192, 132, 64))

    def test_nothing_to_split(self):
        self.assertEqual(choose_key_splits(self.man, 0, 8, 1, 4096, 132), 1)
        self.assertEqual(choose_key_splits(self.man, 1, 8, 1, 4096, 0), 1)

    def test_workspace_shapes(self):
        shapes = {"q": (2, 32, 4, 128), "o": (2, 32, 4, 64)}
        o_split, lse_split = self.man["workspace"]
        self.assertEqual(workspace_shape(o_split, shapes, 5), (5, 2, 32, 4, 64))
        self.assertEqual(workspace_shape(lse_split, shapes, 5), (5, 2, 32, 4))
        self.assertEqual(workspace_shape({"name": "d", "like": "lse"},
                                         {"lse": (2, 3, 4)}), (2, 3, 4))
        # The atomic backward's fragment-major dQ sums: Q's rows rounded up
        # to whole strips of 16.
        sums = {"name": "dq_accum", "like": "q", "dtype": "f32",
                "row_multiple": 16}
        self.assertEqual(workspace_shape(sums, {"q": (2, 3, 100, 128)}),
                         (2, 3, 112, 128))
        self.assertEqual(workspace_shape(sums, {"q": (1, 2, 64, 64)}),
                         (1, 2, 64, 64))
        infos = workspace_infos(self.man, {"q": t("q", (2, 32, 4, 128)),
                                           "o": t("o", (2, 32, 4, 64))}, 3)
        self.assertEqual(infos["o_split"].shape, (3, 2, 32, 4, 64))
        self.assertEqual(infos["lse_split"].strides, (256, 128, 4, 1))
        self.assertEqual(infos["lse_split"].dtype, "float32")
        # The arrival counters of a kernel that merges in its last run's
        # CTA: i32, shaped like Q's [B, Hq, M], no run count.
        counters = {"name": "split_counters", "like": "q", "like_dims": 3,
                    "dtype": "i32", "zero_between_calls": True}
        man = dict(self.man, workspace=self.man["workspace"] + [counters])
        self.assertEqual(workspace_shape(counters, shapes, 5), (2, 32, 4))
        infos = workspace_infos(man, {"q": t("q", (2, 32, 4, 128)),
                                      "o": t("o", (2, 32, 4, 64))}, 3)
        self.assertEqual(infos["split_counters"].shape, (2, 32, 4))
        self.assertEqual(infos["split_counters"].dtype, "int32")

    def test_grid_product(self):
        shapes = {"q": (2, 32, 300, 128), "o_split": (7, 2, 32, 300, 128)}
        split = {"product": [{"tensor": "q", "dim": 2, "ceil_div": 128},
                             {"tensor": "o_split", "dim": 0}]}
        shape_of = shapes.__getitem__
        self.assertEqual(grid_size(split, shape_of), 21)
        self.assertEqual(grid_size({"const": 4}, shape_of), 4)
        self.assertEqual(grid_size({"tensor": "q", "dim": 1}, shape_of), 32)

    def test_grid_scalar(self):
        # A varlen kernel: (blocks of the caller's max_seqlen_q, Hq, S + 1).
        shapes = {"q": (1, 16, 5000, 128), "cu_seqlens_q": (9,)}
        blocks = {"scalar": "max_seqlen_q", "ceil_div": 128}
        self.assertEqual(grid_size(blocks, shapes.__getitem__,
                                   {"max_seqlen_q": 1000}), 8)
        self.assertEqual(grid_size({"tensor": "cu_seqlens_q", "dim": 0},
                                   shapes.__getitem__), 9)
        with self.assertRaisesRegex(ValueError, "needs the scalar 'max_seqlen_q'"):
            grid_size(blocks, shapes.__getitem__)
        with self.assertRaisesRegex(ValueError, "must be non-negative"):
            grid_size(blocks, shapes.__getitem__, {"max_seqlen_q": -1})

    def test_wants_key_splits(self):
        self.assertTrue(wants_key_splits(1, 8, 4, 8192, 132))
        self.assertFalse(wants_key_splits(64, 8, 4, 8192, 132))
        self.assertFalse(wants_key_splits(1, 8, 4, 1024, 132))
        self.assertFalse(wants_key_splits(1, 8, 4096, 8192, 132))
        self.assertFalse(wants_key_splits(0, 8, 4, 8192, 132))


class Varlen(unittest.TestCase):
    """Packed sequences: Q [Tq, Hq, D], K/V [Tk, Hkv, D], int32 offsets."""

    def args(self, tq=300, tk=500, hq=8, hkv=2, d=128, dv=128, s=4):
        return dict(q=t("q", (tq, hq, d)), k=t("k", (tk, hkv, d)),
                    v=t("v", (tk, hkv, dv)),
                    cu_seqlens_q=t("cu_seqlens_q", (s + 1,), "int32"),
                    cu_seqlens_k=t("cu_seqlens_k", (s + 1,), "int32"),
                    max_seqlen_q=100, max_seqlen_k=200)

    def test_valid(self):
        shape = check_varlen(**self.args())
        self.assertEqual((shape.batch, shape.query_heads, shape.kv_heads,
                          shape.queries, shape.keys), (1, 8, 2, 300, 500))
        # The kernels' view: [1, H, T, D] over [T, H, D] memory.
        view = packed_view(t("q", (300, 8, 128)))
        self.assertEqual((view.shape, view.strides),
                         ((1, 8, 300, 128), (300 * 1024, 128, 1024, 1)))
        self.assertTrue(rows_aligned(view))

    def test_errors(self):
        cases = [
            (dict(q=t("q", (1, 300, 8, 128))), ValueError, "q: expected a rank-3 tensor"),
            (dict(k=t("k", (500, 3, 128)), v=t("v", (500, 3, 128))), ValueError,
             "do not divide"),
            (dict(cu_seqlens_q=t("cu_seqlens_q", (5,), "int64")), TypeError,
             "cu_seqlens_q: expected int32, got int64"),
            (dict(cu_seqlens_k=t("cu_seqlens_k", (6,), "int32")), ValueError,
             "cu_seqlens_k: 6 offsets, but cu_seqlens_q has 5"),
            (dict(cu_seqlens_k=t("cu_seqlens_k", (5,), "int32", device="cpu")),
             ValueError, "cu_seqlens_k: expected a CUDA tensor"),
            (dict(cu_seqlens_q=t("cu_seqlens_q", (0,), "int32"),
                  cu_seqlens_k=t("cu_seqlens_k", (0,), "int32")), ValueError,
             "needs at least one offset"),
            (dict(max_seqlen_q=-1), ValueError, "max_seqlen_q: expected a value >= 0"),
            (dict(max_seqlen_k=2.0), TypeError, "max_seqlen_k: expected an int"),
            (dict(v=t("v", (500, 2, 128), "float16")), TypeError, "v: expected bfloat16"),
        ]
        for change, error, message in cases:
            args = self.args()
            args.update(change)
            with self.assertRaisesRegex(error, message, msg=str(change)):
                check_varlen(**args)

    def test_backward(self):
        args = self.args(dv=64)
        good = dict(grad_output=t("grad_output", (300, 8, 64)),
                    output=t("output", (300, 8, 64)),
                    lse=t("lse", (8, 300), "float32"))
        shape = check_varlen_backward(**good, **args)
        self.assertEqual(shape.value_dim, 64)
        for name, bad, message in (
                ("lse", t("lse", (1, 8, 300), "float32"), "lse: expected a rank-2"),
                ("lse", t("lse", (8, 299), "float32"), "log-sum-exp shape"),
                ("output", t("output", (300, 8, 128)), "output shape"),
                ("grad_output", t("grad_output", (300, 8, 64), "float16"),
                 "grad_output: expected bfloat16")):
            with self.assertRaisesRegex((TypeError, ValueError), message):
                check_varlen_backward(**{**good, name: bad}, **args)


class Softcap(unittest.TestCase):
    def test_softcap(self):
        check_softcap(None)
        check_softcap(30.0)
        check_softcap(50)
        for bad, error in ((0.0, ValueError), (-1.0, ValueError),
                           (float("inf"), ValueError), (float("nan"), ValueError),
                           ("30", TypeError), (True, TypeError)):
            with self.assertRaises(error, msg=repr(bad)):
                check_softcap(bad)


class KvCache(unittest.TestCase):
    """flash_attn_with_kvcache's arguments: Q [B, M, Hq, D], a cache
    [B, N, Hkv, D] or pages [num_pages, page, Hkv, D] with a block table."""

    def args(self, b=3, m=1, hq=8, hkv=2, n=4096, d=128, paged=None):
        out = dict(q=t("q", (b, m, hq, d)),
                   cache_seqlens=t("cache_seqlens", (b,), "int32"))
        if paged:
            pages = b * n // paged
            out.update(k_cache=t("k_cache", (pages + 5, paged, hkv, d)),
                       v_cache=t("v_cache", (pages + 5, paged, hkv, d)),
                       block_table=t("block_table", (b, n // paged), "int32"))
        else:
            out.update(k_cache=t("k_cache", (b, n, hkv, d)),
                       v_cache=t("v_cache", (b, n, hkv, d)))
        return out

    def test_valid(self):
        shape = check_kvcache(**self.args())
        self.assertEqual((shape.batch, shape.query_heads, shape.kv_heads,
                          shape.queries, shape.keys), (3, 8, 2, 1, 4096))
        # Paged: N is the table's pages times the page size.
        shape = check_kvcache(**self.args(paged=64))
        self.assertEqual(shape.keys, 4096)
        new = dict(k=t("k", (3, 5, 2, 128)), v=t("v", (3, 5, 2, 128)))
        self.assertEqual(check_kvcache(**self.args(m=5), **new).queries, 5)

    def test_errors(self):
        paged = self.args(paged=64)
        cases = [
            (self.args(), dict(cache_seqlens=t("cache_seqlens", (3,), "int64")),
             TypeError, "cache_seqlens: expected int32"),
            (self.args(), dict(cache_seqlens=t("cache_seqlens", (2,), "int32")),
             ValueError, "cache_seqlens: batch is 2"),
            (self.args(), dict(k_cache=t("k_cache", (2, 4096, 2, 128))),
             ValueError, "k_cache: batch is 2"),
            (self.args(), dict(q=t("q", (3, 8, 128))), ValueError,
             "q: expected a rank-4 tensor"),
            (paged, dict(block_table=t("block_table", (3, 64), "int64")),
             TypeError, "block_table: expected int32"),
            (paged, dict(block_table=t("block_table", (2, 64), "int32")),
             ValueError, "block_table: batch is 2"),
            (self.args(paged=24), {}, ValueError, "page size 24 is not supported"),
            (self.args(), dict(k=t("k", (3, 5, 2, 128))), ValueError,
             "k and v: the new keys and values come together"),
            (self.args(), dict(k=t("k", (3, 5, 4, 128)), v=t("v", (3, 5, 2, 128))),
             ValueError, r"k: expected \[B, Mk, Hkv, D\]"),
            (self.args(n=64), dict(k=t("k", (3, 65, 2, 128)),
                                   v=t("v", (3, 65, 2, 128))),
             ValueError, "65 new keys do not fit a cache of 64"),
            (self.args(), dict(k=t("k", (3, 5, 2, 128), "float16"),
                               v=t("v", (3, 5, 2, 128))),
             TypeError, "k: expected bfloat16"),
        ]
        for base, change, error, message in cases:
            with self.assertRaisesRegex(error, message, msg=message):
                check_kvcache(**{**base, **change})


if __name__ == "__main__":
    unittest.main()
