// sm_80 forward kernels rescale the accumulator every key block where that
// fits the registers (GPU-NOTES 60: 4-5% faster at D = 64 on mma.sync); a
// kernel that would spill so keeps the warp-vote-guarded rescale (the next
// configuration flash-compile tries, same tiles; the vote itself is tested
// in test/GPU/flash-map-tiles-to-gpu-warps.mlir).
// RUN: rm -rf %t && mkdir -p %t
// RUN: flash-compile %s --chip sm_80 -o %t 2>&1 | FileCheck %s --check-prefix=LOG
// RUN: FileCheck %s --check-prefix=EAGER < %t/d64.ptx

// LOG: d64: {{.*}}, tiles 128x64, 128 threads, {{.*}}, spill bytes 0, {{.*}}, warp registers, eager rescale
// EAGER-NOT: vote.sync.any

func.func @d64(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16> {
  %o = flash.attention %q, %k, %v : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16> -> tensor<?x?x?x64xbf16>
  return %o : tensor<?x?x?x64xbf16>
}
