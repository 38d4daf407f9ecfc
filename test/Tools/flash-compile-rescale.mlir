// sm_80 forward kernels rescale the accumulator every key block where that
// fits the registers (GPU-NOTES 60: 4-5% faster at D = 64 on mma.sync), and
// keep the warp-vote-guarded rescale where the eager one spills (D = 128 at
// 128 x 64 tiles): the PTX of the first has no vote, the second's does.
// RUN: rm -rf %t && mkdir -p %t
// RUN: flash-compile %s --chip sm_80 -o %t 2>&1 | FileCheck %s --check-prefix=LOG
// RUN: FileCheck %s --check-prefix=EAGER < %t/d64.ptx
// RUN: FileCheck %s --check-prefix=LAZY < %t/d128.ptx

// LOG: d64: {{.*}}, tiles 128x64, 128 threads, {{.*}}, spill bytes 0, {{.*}}, warp registers, eager rescale
// LOG: d128: {{.*}}, tiles 128x64, 128 threads, {{.*}}, spill bytes 0, {{.*}}, warp registers{{$}}
// EAGER-NOT: vote.sync.any
// LAZY: vote.sync.any

func.func @d64(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16> {
  %o = flash.attention %q, %k, %v : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16> -> tensor<?x?x?x64xbf16>
  return %o : tensor<?x?x?x64xbf16>
}

func.func @d128(%q: tensor<?x?x?x128xbf16>, %k: tensor<?x?x?x128xbf16>, %v: tensor<?x?x?x128xbf16>) -> tensor<?x?x?x128xbf16> {
  %o = flash.attention %q, %k, %v : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16> -> tensor<?x?x?x128xbf16>
  return %o : tensor<?x?x?x128xbf16>
}
