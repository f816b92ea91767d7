#include "detkit/utils/cpu_features.h"

#include <cpuid.h>

namespace detkit {

CpuFeatures cpu_features() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d))  // "AuthenticAMD" in EBX, EDX, ECX
    f.amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) f.amx_bf16 = (d >> 22) & 1;    // CPUID.7.0:EDX[22]
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = (a >> 5) & 1;  // CPUID.7.1:EAX[5]
  return f;
}

}  // namespace detkit
