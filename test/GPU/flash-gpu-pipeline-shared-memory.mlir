// Tiles that no CTA can hold are rejected where the mapping first sizes
// them, before any tile is unrolled (fuzzer finding F6, docs/Fuzzing.md):
// a located error with the bytes needed and the chip's limit, exit status 1,
// in a fraction of a second. Large static head dims with dynamic B, H, M, N
// used to go all the way to PTX (D = 1024: 334,592 B of shared memory
// accepted on sm_90a; D = 8192: 18 s, 2.6 MB asked for).
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-gpu-pipeline="chip=sm_90a"
// RUN: not flash-opt %s -split-input-file --flash-gpu-pipeline="chip=sm_80" 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: %python %S/../Inputs/expect_exit.py 1 timeout 60 flash-opt %s -split-input-file --flash-gpu-pipeline="chip=sm_90a"
// One warp per block (threads=32) used to keep the D = 512 backward's tiles
// in registers, 512 words of dQ per lane: 26,660 lines of PTX, 6.5 s per
// function (the fuzzer's --seed 4000 run timed out on two of them). Tiles
// that cannot fit twice the register file stay in shared memory, whose limit
// then rejects the block at once.
// RUN: not timeout 20 flash-opt %s -split-input-file --flash-gpu-pipeline="chip=sm_80 threads=32 async-copies=false" 2>&1 | FileCheck %s --check-prefix=WARP
// WARP: error: flash-gpu-carve-shared-memory: the tiles need 229504 B of shared memory, more than the 166912 B a CTA may use on sm_80

// SM80: error: flash-gpu-carve-shared-memory: the tiles need 334592 B of shared memory, more than the 166912 B a CTA may use on sm_80
// SM80: error: flash-gpu-carve-shared-memory: the tiles need 2628352 B of shared memory, more than the 166912 B a CTA may use on sm_80
// SM80: error: flash-gpu-carve-shared-memory: the tiles need 229504 B of shared memory, more than the 166912 B a CTA may use on sm_80

func.func @d1024(%q: tensor<?x?x?x1024xbf16>, %k: tensor<?x?x?x1024xbf16>, %v: tensor<?x?x?x1024xbf16>, %o: tensor<?x?x?x1024xbf16> {bufferization.writable = true}) -> tensor<?x?x?x1024xbf16> {
  // expected-error @+1 {{flash-gpu-carve-shared-memory: the tiles need 334592 B of shared memory, more than the 232448 B a CTA may use on sm_90a}}
  %r = flash.attention %q, %k, %v : tensor<?x?x?x1024xbf16>, tensor<?x?x?x1024xbf16>, tensor<?x?x?x1024xbf16> -> tensor<?x?x?x1024xbf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x1024xbf16>, tensor<?x?x?x1024xbf16>) -> tensor<?x?x?x1024xbf16>
  return %w : tensor<?x?x?x1024xbf16>
}

// -----

func.func @d8192(%q: tensor<?x?x?x8192xbf16>, %k: tensor<?x?x?x8192xbf16>, %v: tensor<?x?x?x8192xbf16>, %o: tensor<?x?x?x8192xbf16> {bufferization.writable = true}) -> tensor<?x?x?x8192xbf16> {
  // expected-error @+1 {{flash-gpu-carve-shared-memory: the tiles need 2628352 B of shared memory, more than the 232448 B a CTA may use on sm_90a}}
  %r = flash.attention %q, %k, %v : tensor<?x?x?x8192xbf16>, tensor<?x?x?x8192xbf16>, tensor<?x?x?x8192xbf16> -> tensor<?x?x?x8192xbf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x8192xbf16>, tensor<?x?x?x8192xbf16>) -> tensor<?x?x?x8192xbf16>
  return %w : tensor<?x?x?x8192xbf16>
}

// -----

// The backward's two kernels are checked the same way.
func.func @backward_d512(%q: tensor<?x?x?x512xbf16>, %k: tensor<?x?x?x512xbf16>, %v: tensor<?x?x?x512xbf16>, %o: tensor<?x?x?x512xbf16>, %do: tensor<?x?x?x512xbf16>, %lse: tensor<?x?x?xf32>, %dq_out: tensor<?x?x?x512xbf16> {bufferization.writable = true}, %dk_out: tensor<?x?x?x512xbf16> {bufferization.writable = true}, %dv_out: tensor<?x?x?x512xbf16> {bufferization.writable = true}) -> (tensor<?x?x?x512xbf16>, tensor<?x?x?x512xbf16>, tensor<?x?x?x512xbf16>) {
  // expected-error @+1 {{flash-gpu-carve-shared-memory: the tiles need 276736 B of shared memory, more than the 232448 B a CTA may use on sm_90a}}
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse {causal} : tensor<?x?x?x512xbf16>, tensor<?x?x?x512xbf16>, tensor<?x?x?x512xbf16>, tensor<?x?x?x512xbf16>, tensor<?x?x?xf32>
  %0 = bufferization.materialize_in_destination %dq in %dq_out : (tensor<?x?x?x512xbf16>, tensor<?x?x?x512xbf16>) -> tensor<?x?x?x512xbf16>
  %1 = bufferization.materialize_in_destination %dk in %dk_out : (tensor<?x?x?x512xbf16>, tensor<?x?x?x512xbf16>) -> tensor<?x?x?x512xbf16>
  %2 = bufferization.materialize_in_destination %dv in %dv_out : (tensor<?x?x?x512xbf16>, tensor<?x?x?x512xbf16>) -> tensor<?x?x?x512xbf16>
  return %0, %1, %2 : tensor<?x?x?x512xbf16>, tensor<?x?x?x512xbf16>, tensor<?x?x?x512xbf16>
}
