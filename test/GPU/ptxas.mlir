// Every GPU kernel variant assembles with ptxas for sm_90a and sm_80, and none
// spills: flash-compile fails on a ptxas error, manifest_check on a spill.
// RUN: rm -rf %t && flash-compile %flash_src/examples/gpu/variants.mlir --chip sm_90a -o %t/sm_90a | FileCheck %s
// RUN: flash-compile %flash_src/examples/gpu/variants.mlir --chip sm_80 -o %t/sm_80 | FileCheck %s
// RUN: %python -m flash_mlir.manifest_check %t/sm_90a %t/sm_80 | FileCheck %s --check-prefix=MANIFEST
// On sm_90a the D = 128 kernel runs its contractions on wgmma, on sm_80 on
// mma.sync.
// RUN: cat %t/sm_90a/attn_bf16_d128.json | FileCheck %s --check-prefix=SM90
// RUN: cat %t/sm_80/attn_bf16_d128.json | FileCheck %s --check-prefix=SM80
// SM90: "mma": "wgmma"
// SM80: "mma": "mma.sync"

// Each variant also has a general kernel (element copies) for rows that are
// not 16-byte aligned, and each warp-specialised sm_90a one its persistent
// form (the runtime's for up to 2048 keys).
// CHECK: attn_f16_d64: {{.*}}.ptx, tiles {{[0-9]+}}x{{[0-9]+}}, {{[0-9]+}} threads, registers {{[0-9]+}}, spill bytes 0
// CHECK: attn_f16_d64_general: {{.*}}, spill bytes 0
// CHECK: attn_f16_d128_causal: {{.*}}, spill bytes 0
// CHECK: attn_bf16_d128_causal: {{.*}}, spill bytes 0
// CHECK: attn_f16_d96_window: {{.*}}, spill bytes 0
// MANIFEST: 75 kernels assembled, 0 spill
