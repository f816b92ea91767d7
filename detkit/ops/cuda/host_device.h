#pragma once
// DETKIT_HOST_DEVICE marks the arithmetic detkit's CUDA kernels share with the host compiler
// (the *_math.h headers here): a __host__ __device__ function under nvcc, a plain inline one
// elsewhere, so the tests check it against the CPU kernels on machines without a GPU.
#if defined(__CUDACC__)
#define DETKIT_HOST_DEVICE __host__ __device__
#else
#define DETKIT_HOST_DEVICE
#endif
