// The options of --flash-gpu-pipeline that change its output, one RUN line
// each: which instructions the tile contractions take (tensor-cores=) and
// what gpu-module-to-binary makes (format=). f16 on sm_80, where auto takes
// WMMA.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_80 tensor-cores=wmma" | FileCheck %s --check-prefixes=PTX,WMMA
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_80" | FileCheck %s --check-prefixes=PTX,WMMA
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_80 tensor-cores=mma-sync" | FileCheck %s --check-prefixes=PTX,MMASYNC
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_80 tensor-cores=none" > %t.none
// RUN: FileCheck %s --check-prefix=PTX < %t.none
// RUN: FileCheck %s --check-prefix=NONE < %t.none
// RUN: %if ptxas %{ flash-opt %s --flash-gpu-pipeline="chip=sm_80 format=bin" | FileCheck %s --check-prefix=BIN %}
// A value outside the enum is rejected where it is written.
// RUN: not flash-opt %s --flash-gpu-pipeline="tensor-cores=tensor" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not flash-opt %s --flash-gpu-pipeline="format=elf" 2>&1 | FileCheck %s --check-prefix=BADFORMAT

// PTX: gpu.binary @forward_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">, properties = {{.*}}, assembly = "
// PTX-SAME: .visible .entry forward_kernel(
// PTX-SAME: cp.async.cg.shared.global

// WMMA-SAME: wmma.load.a.sync.aligned.row.m16n16k16.f16
// WMMA-SAME: wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32
// WMMA-NOT: mma.sync.aligned.m16n8k16

// MMASYNC-NOT: wmma.
// MMASYNC-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// MMASYNC-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// MMASYNC-NOT: wmma.

// Without tensor cores the contractions are SIMT loops: no MMA, no ldmatrix.
// NONE-NOT: mma.sync
// NONE-NOT: ldmatrix

// BIN: gpu.binary @forward_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">, properties = {{.*}}, bin = "\7FELF

// BAD: for the --tensor-cores option: Cannot find option named 'tensor'!
// BADFORMAT: for the --format option: Cannot find option named 'elf'!

func.func @forward(%q: tensor<1x2x64x64xf16>, %o_out: tensor<1x2x64x64xf16> {bufferization.writable = true}) -> tensor<1x2x64x64xf16> {
  %o = flash.attention %q, %q, %q : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf16>
  %r = bufferization.materialize_in_destination %o in %o_out : (tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16>
  return %r : tensor<1x2x64x64xf16>
}
