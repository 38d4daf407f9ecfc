"""flash-mlir Python tools: float64 references, CPU execution harness and
(on a GPU machine) the kernel runtime."""

__version__ = "0.1.0"
