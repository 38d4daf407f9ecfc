"""The runtime's cuLaunchKernelEx configuration (programmatic dependent
launch) laid out as cuda.h's CUlaunchConfig and CUlaunchAttribute."""

import ctypes
import unittest

from flash_mlir import runtime


class LaunchConfig(unittest.TestCase):
    def test_layout_matches_cuda_h(self):
        # CUlaunchAttribute: id, 4 bytes of padding, a 64-byte union.
        self.assertEqual(ctypes.sizeof(runtime._LaunchAttribute), 72)
        self.assertEqual(runtime._LaunchAttribute.value.offset, 8)
        # CUlaunchConfig: seven unsigned ints, then the stream (8-aligned),
        # the attribute array and their count.
        self.assertEqual(runtime._LaunchConfig.stream.offset, 32)
        self.assertEqual(runtime._LaunchConfig.attrs.offset, 40)
        self.assertEqual(runtime._LaunchConfig.num_attrs.offset, 48)

    def test_programmatic_stream_serialization(self):
        config = runtime.dependent_launch_config((256, 1, 1), 3584)
        config.grid[:] = (16, 8, 1)
        self.assertEqual(list(config.grid), [16, 8, 1])
        self.assertEqual(list(config.block), [256, 1, 1])
        self.assertEqual(config.shared_mem_bytes, 3584)
        self.assertEqual(config.num_attrs, 1)
        self.assertEqual(config.attrs[0].id, 6)
        self.assertEqual(
            config.attrs[0].value.programmatic_stream_serialization_allowed, 1)


if __name__ == "__main__":
    unittest.main()


class CubinTarget(unittest.TestCase):
    """Which cubins the runtime offers the driver (the others' PTX is JIT-compiled
    without a failed load first)."""

    def test_same_major_newer_minor(self):
        self.assertTrue(runtime.cubin_runs_on("sm_80", (8, 0)))
        self.assertTrue(runtime.cubin_runs_on("sm_80", (8, 6)))
        self.assertFalse(runtime.cubin_runs_on("sm_86", (8, 0)))

    def test_other_major(self):
        self.assertFalse(runtime.cubin_runs_on("sm_80", (9, 0)))
        self.assertFalse(runtime.cubin_runs_on("sm_90", (10, 0)))

    def test_architecture_specific(self):
        self.assertTrue(runtime.cubin_runs_on("sm_90a", (9, 0)))
        self.assertFalse(runtime.cubin_runs_on("sm_90a", (9, 1)))
        self.assertFalse(runtime.cubin_runs_on("sm_90a", (10, 0)))
        self.assertTrue(runtime.cubin_runs_on("sm_100a", (10, 0)))

    def test_unknown_chip_left_to_the_driver(self):
        self.assertIsNone(runtime.cubin_runs_on(None, (9, 0)))
        self.assertIsNone(runtime.cubin_runs_on("compute_80", (9, 0)))
