// Sliding-window kernels take the warp-specialised form of the plain causal
// kernel (a producer warpgroup and two consumer warpgroups, 128 x 176 tiles):
// their producer walks three key loops (the window's first blocks, the
// unmasked ones, the diagonal's), whose coordinates outlive 24 registers, so
// it keeps 40 (GPU-NOTES 83); at 24 it spilled and the search fell back to
// 128 x 48 on 128 threads. The windowed KV-cache forward too. Nothing spills.
// RUN: rm -rf %t && flash-compile %s --chip sm_90a -o %t | FileCheck %s
// CHECK-DAG: window: {{.*}}, tiles 128x176, 384 threads, {{.*}}spill bytes 0
// CHECK-DAG: cache_window: {{.*}}, tiles 128x{{[0-9]+}}, 384 threads, {{.*}}spill bytes 0
// RUN: grep -c "setmaxnreg.dec.sync.aligned.u32 	40" %t/window.ptx %t/cache_window.ptx | FileCheck %s --check-prefix=PRODUCER
// PRODUCER: window.ptx:1
// PRODUCER: cache_window.ptx:1
// The plain causal kernel's producer (two key loops) keeps 24.
// RUN: grep -c "setmaxnreg.dec.sync.aligned.u32 	24" %t/causal.ptx | FileCheck %s --check-prefix=PLAIN
// PLAIN: 1

func.func @window(%q: tensor<?x?x?x128xbf16>, %k: tensor<?x?x?x128xbf16>, %v: tensor<?x?x?x128xbf16>) -> tensor<?x?x?x128xbf16> {
  %o = flash.attention %q, %k, %v {causal, window = 128 : i64} : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16> -> tensor<?x?x?x128xbf16>
  return %o : tensor<?x?x?x128xbf16>
}

func.func @causal(%q: tensor<?x?x?x128xbf16>, %k: tensor<?x?x?x128xbf16>, %v: tensor<?x?x?x128xbf16>) -> tensor<?x?x?x128xbf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16> -> tensor<?x?x?x128xbf16>
  return %o : tensor<?x?x?x128xbf16>
}

func.func @cache_window(%q: tensor<?x8x1x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>, %l: tensor<?xi32>, %s: tensor<8xf32>) -> (tensor<?x8x1x128xbf16>, tensor<?x8x1xf32>) {
  %o, %lse = flash.attention %q, %k, %v sinks(%s : tensor<8xf32>) key_lengths(%l : tensor<?xi32>) {causal, window = 100 : i64} : tensor<?x8x1x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x1x128xbf16>, tensor<?x8x1xf32>
  return %o, %lse : tensor<?x8x1x128xbf16>, tensor<?x8x1xf32>
}
