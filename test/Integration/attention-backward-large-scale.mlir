// The backward at huge scales (1e3 to 1e10, and -1e10), on the CPU against
// the float64 reference: the tiled forward keeps the max and the LSE in
// natural units there (test/Transforms/flash-tile-attention-large-scale.mlir)
// and every tiled backward recomputes P = exp2((scale s + bias - LSE) log2 e),
// subtracting first; before, the two roundings of c s and LSE log2 e differed
// by about 1e3 at scale 1e10 (P = inf, dQ and dK NaN; dV off by 5e-2 at 1e5).
// dV is what P decides; dQ and dK are compared only where they are not the
// reference's own rounding times the scale (at such scales P is one-hot and
// dS = P (dP - rowsum(dO O)) is 0 up to float64 rounding, which the scale
// then multiplies: the naive decomposition does not reproduce it either).
// RUN: %python -m flash_mlir.cpu_check --mode bwd --m 20 --n 24 --d 16 --scale 1e10 --outputs dv | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --m 20 --n 24 --d 16 --scale 1e10 --outputs dv --target sm_80 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --scale 1e5 --outputs dv --target sm_90a --causal --dynamic mn | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --m 20 --n 24 --d 16 --scale 1000 --outputs dv --target sm_90a --bias 1x2x20x24 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --m 20 --n 24 --d 16 --scale=-1e10 --outputs dv --target sm_90a | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --m 20 --n 24 --d 16 --scale 1e10 --outputs dv --no-tile | FileCheck %s
// A moderate scale keeps the exponent form and every gradient is compared.
// RUN: %python -m flash_mlir.cpu_check --mode bwd --m 20 --n 24 --d 16 --scale 0.7 --target sm_90a | FileCheck %s
// CHECK: PASS
