"""flash_mlir.flops: the benchmarks' FLOP counts against pairs counted one
by one (no torch, no numpy)."""

import unittest

from flash_mlir.flops import forward_flops, visible_pairs


def counted(seq, causal, window):
    return sum(1 for i in range(seq) for j in range(seq)
               if (not causal or j <= i) and (window is None or j >= i - window))


class VisiblePairs(unittest.TestCase):
    def test_windows_count_each_visible_pair(self):
        for seq in (1, 5, 17, 64):
            for window in (0, 1, 3, 16, 100):
                for causal in (False, True):
                    self.assertEqual(visible_pairs(seq, causal, window),
                                     counted(seq, causal, window),
                                     (seq, causal, window))

    def test_convention_without_window(self):
        # FlashAttention's convention: seq^2, halved under a causal mask.
        self.assertEqual(visible_pairs(8, False), 64)
        self.assertEqual(visible_pairs(8, True), 32)
        self.assertEqual(visible_pairs(8, False, None), counted(8, False, None))

    def test_forward_flops(self):
        self.assertEqual(forward_flops(4, 16, 4096, 128, False),
                         4 * 4 * 16 * 4096 * 4096 * 128)
        self.assertEqual(forward_flops(1, 2, 16, 64, True, 3),
                         4 * 2 * 64 * counted(16, True, 3))


if __name__ == "__main__":
    unittest.main()
