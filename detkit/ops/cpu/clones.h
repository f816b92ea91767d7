#pragma once
// DETKIT_CLONES: a function compiled for AVX-512, AVX2 and the baseline, the clone picked at load
// time for the CPU (GCC's target_clones). Used by the element-wise loops of ops/cpu, in files
// compiled without floating-point contraction (ops/CMakeLists.txt).
#define DETKIT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
