"""flash_mlir.validate.tensor_map_request: what the runtime hands
cuTensorMapEncodeTiled for a kernel's `tensor_maps` parameter (TMA loads),
checked without a GPU: dimensions and strides innermost first, in bytes, the
box along the manifest's row dimension, and the layouts TMA cannot address
refused by name."""

import unittest

from flash_mlir.validate import (TensorInfo, check_launch, manifest_params,
                                 rows_aligned, tensor_map_request,
                                 tensor_maps_apply)


def t(name, shape, strides, dtype="bfloat16", ptr=1 << 20):
    return TensorInfo(name, tuple(shape), tuple(strides), dtype, "cuda:0", ptr)


K_MAP = {"tensor": "k", "row_dim": 2, "box_rows": 64, "box_cols": 64,
         "swizzle_bytes": 128}


class TensorMapRequest(unittest.TestCase):
    def test_bhsd(self):
        k = t("k", (2, 8, 1000, 128), (8 * 1000 * 128, 1000 * 128, 128, 1))
        r = tensor_map_request(K_MAP, k)
        self.assertEqual(r["rank"], 4)
        self.assertEqual(r["dims"], [128, 1000, 8, 2])
        self.assertEqual(r["strides"], [256, 1000 * 256, 8 * 1000 * 256])
        self.assertEqual(r["box"], [64, 64, 1, 1])
        self.assertEqual(r["dtype"], 9)       # CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
        self.assertEqual(r["swizzle"], 3)     # CU_TENSOR_MAP_SWIZZLE_128B
        self.assertEqual(r["oob_fill"], 0)    # rows past the end read as zeros
        self.assertEqual(r["address"], 1 << 20)

    def test_bshd_view(self):
        # [B, S, H, D] memory seen as [B, H, S, D]: the strides follow.
        k = t("k", (2, 8, 1000, 64), (1000 * 8 * 64, 64, 8 * 64, 1), "float16")
        r = tensor_map_request(dict(K_MAP, box_rows=128), k)
        self.assertEqual(r["dims"], [64, 1000, 8, 2])
        self.assertEqual(r["strides"], [8 * 64 * 2, 64 * 2, 1000 * 8 * 64 * 2])
        self.assertEqual(r["box"], [64, 128, 1, 1])
        self.assertEqual(r["dtype"], 6)       # CU_TENSOR_MAP_DATA_TYPE_FLOAT16

    def test_refused(self):
        with self.assertRaisesRegex(ValueError, "k: the innermost dimension"):
            tensor_map_request(K_MAP, t("k", (1, 1, 64, 128), (1, 1, 1, 64)))
        with self.assertRaisesRegex(ValueError, "k: TMA needs 16-byte aligned"):
            tensor_map_request(K_MAP, t("k", (1, 1, 64, 127), (64 * 127, 64 * 127, 127, 1)))
        with self.assertRaisesRegex(ValueError, "k: TMA needs 16-byte aligned"):
            tensor_map_request(K_MAP, t("k", (1, 1, 64, 128), (8192, 8192, 128, 1), ptr=8))
        with self.assertRaisesRegex(TypeError, "k: no tensor map for float64"):
            tensor_map_request(K_MAP, t("k", (1, 1, 64, 128), (8192, 8192, 128, 1), "float64"))

    def test_row_vector(self):
        # The backward's LSE (and D) rows: f32 boxes of 64 elements along the
        # innermost dimension, unswizzled.
        lse_map = {"tensor": "lse", "row_dim": 2, "box_rows": 64, "box_cols": 64,
                   "swizzle_bytes": 0}
        lse = t("lse", (2, 8, 1000), (8 * 1000, 1000, 1), "float32")
        r = tensor_map_request(lse_map, lse)
        self.assertEqual(r["dims"], [1000, 8, 2])
        self.assertEqual(r["strides"], [4000, 8 * 4000])
        self.assertEqual(r["box"], [64, 1, 1])
        self.assertEqual(r["dtype"], 7)       # CU_TENSOR_MAP_DATA_TYPE_FLOAT32
        self.assertEqual(r["swizzle"], 0)     # CU_TENSOR_MAP_SWIZZLE_NONE
        # 77 queries: rows of 308 bytes, which TMA cannot step by.
        with self.assertRaisesRegex(ValueError, "lse: TMA needs 16-byte aligned"):
            tensor_map_request(lse_map, t("lse", (2, 8, 77), (8 * 77, 77, 1), "float32"))

    def test_workspaces_checked_before_they_exist(self):
        # D is a workspace shaped like the LSE that the runtime allocates at
        # launch: whether its map applies follows from the LSE's shape.
        d_map = {"tensor": "d", "row_dim": 2, "box_rows": 64, "box_cols": 64,
                 "swizzle_bytes": 0}
        man = {"workspace": [{"name": "d", "like": "lse", "dtype": "f32"}],
               "launches": [{"params": [{"name": "tensor_maps", "kind": "tensor_maps",
                                         "rank": 1, "maps": [d_map]}]}]}
        lse = t("lse", (2, 8, 1000), (8 * 1000, 1000, 1), "float32")
        self.assertTrue(tensor_maps_apply(man, {"lse": lse}))
        ragged = t("lse", (2, 8, 77), (8 * 77, 77, 1), "float32")
        self.assertFalse(tensor_maps_apply(man, {"lse": ragged}))

    def test_staged_dq_sums(self):
        # The atomic backward's staged dQ sums (--staged-reductions): TMA
        # tensor reductions into the f32 workspace shaped like Q, boxes of
        # one 128-byte swizzled panel (32 f32) by a warpgroup's 64 rows; a
        # BSHD Q gives a contiguous [B, H, S, D] workspace all the same.
        dq_map = {"tensor": "dq_accum", "row_dim": 2, "box_rows": 64,
                  "box_cols": 32, "swizzle_bytes": 128}
        man = {"workspace": [{"name": "dq_accum", "like": "q", "dtype": "f32"}],
               "launches": [{"params": [{"name": "tensor_maps", "kind": "tensor_maps",
                                         "rank": 1, "maps": [dq_map]}]}]}
        q = t("q", (2, 8, 1000, 128), (1000 * 8 * 128, 128, 8 * 128, 1))
        self.assertTrue(tensor_maps_apply(man, {"q": q}))
        dq = t("dq_accum", (2, 8, 1000, 128), (8 * 1000 * 128, 1000 * 128, 128, 1),
               "float32")
        r = tensor_map_request(dq_map, dq)
        self.assertEqual(r["dims"], [128, 1000, 8, 2])
        self.assertEqual(r["strides"], [512, 1000 * 512, 8 * 1000 * 512])
        self.assertEqual(r["box"], [32, 64, 1, 1])
        self.assertEqual(r["dtype"], 7)       # CU_TENSOR_MAP_DATA_TYPE_FLOAT32
        self.assertEqual(r["swizzle"], 3)     # CU_TENSOR_MAP_SWIZZLE_128B

    def test_broadcast_heads_take_the_general_kernel(self):
        # K expanded over heads (stride 0): aligned rows for cp.async, but
        # not a tensor TMA can address; the launcher takes the general kernel.
        k = t("k", (2, 8, 1000, 128), (1000 * 128, 0, 128, 1))
        self.assertTrue(rows_aligned(k))
        with self.assertRaisesRegex(ValueError, "k: TMA cannot read a broadcast"):
            tensor_map_request(K_MAP, k)
        man = {"params": [{"name": "tensor_maps", "kind": "tensor_maps", "rank": 1,
                           "maps": [K_MAP]}]}
        self.assertFalse(tensor_maps_apply(man, {"k": k}))
        dense = t("k", (2, 8, 1000, 128), (8 * 1000 * 128, 1000 * 128, 128, 1))
        self.assertTrue(tensor_maps_apply(man, {"k": dense}))
        self.assertTrue(tensor_maps_apply({"params": []}, {"k": k}))

    def test_not_a_tensor_parameter(self):
        # The map buffer is the runtime's, not the caller's: the checks of a
        # launch neither ask for it nor accept it.
        def p(name):
            return {"name": name, "dtype": "bf16", "rank": 4, "shape": [None] * 3 + [128]}
        man = {"kernel": "attn", "dtype": "bf16", "params": [
            {"name": "tensor_maps", "kind": "tensor_maps", "rank": 1,
             "maps": [K_MAP]}, p("q"), p("k"), p("v"), p("o")]}
        self.assertEqual([q["name"] for q in manifest_params(man)], ["q", "k", "v", "o"])
        s = (2, 4, 100, 128)
        st = (4 * 100 * 128, 100 * 128, 128, 1)
        check_launch(man, {n: t(n, s, st) for n in ("q", "k", "v", "o")})
        with self.assertRaisesRegex(ValueError, "unexpected tensor 'tensor_maps'"):
            check_launch(man, dict({n: t(n, s, st) for n in ("q", "k", "v", "o")},
                                   tensor_maps=t("tensor_maps", (256,), (1,), "uint8")))


if __name__ == "__main__":
    unittest.main()
