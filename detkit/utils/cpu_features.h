#pragma once
// What this CPU has, for the log's notes on how fast a precision runs here (solver/amp.h).

namespace detkit {

struct CpuFeatures {
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false, avx512dq = false,
       avx512vl = false;
  bool avx512_bf16 = false;  // bfloat16 dot products in AVX-512 (Cooper Lake, Zen 4, ...)
  bool amx_bf16 = false;     // bfloat16 tile units (Sapphire Rapids and later)
  bool amd = false;          // vendor AuthenticAMD
};
/// This CPU's.
CpuFeatures cpu_features();

}  // namespace detkit
