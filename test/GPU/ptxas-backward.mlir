// The training variants (forward with LSE, backward as a dQ and a dK/dV
// kernel, each with its general pair; the warp-specialised sm_90a forwards
// with their persistent forms) assemble with ptxas for sm_90a and
// sm_80 without spills; flash-compile narrows the dK/dV steps when the first
// choice spills.
// RUN: rm -rf %t && flash-compile %flash_src/examples/gpu/training.mlir --chip sm_90a -o %t/sm_90a | FileCheck %s
// RUN: flash-compile %flash_src/examples/gpu/training.mlir --chip sm_80 -o %t/sm_80 | FileCheck %s
// RUN: %python -m flash_mlir.manifest_check %t/sm_90a %t/sm_80 | FileCheck %s --check-prefix=MANIFEST

// CHECK: train_bf16_d128: {{.*}}, spill bytes 0
// CHECK: train_bf16_d128_backward launch 0 {{.*}}, spill bytes 0, {{.*}}, warp registers
// CHECK: train_bf16_d128_backward launch 1 {{.*}}, spill bytes 0
// CHECK: train_bf16_d128_backward_general launch 1 {{.*}}, spill bytes 0
// CHECK: train_f16_d64_causal_backward launch 1 {{.*}}, spill bytes 0
// MANIFEST: 65 kernels assembled, 0 spill
