// Block-wide counting for stream compaction (row-returning GPU segments).
//
// Every thread of the block must call these, the same number of times: they
// synchronize the block. Blocks are a multiple of 32 threads.

// The sum of `v` over the block; the result is valid in thread 0 only.
__device__ __forceinline__ unsigned long long aether_block_sum(unsigned long long v) {
    __shared__ unsigned long long aether_warp_sums[32];
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    if ((threadIdx.x & 31u) == 0u) aether_warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    unsigned long long total = 0ULL;
    if (threadIdx.x == 0u) {
        const unsigned warps = (blockDim.x + 31u) >> 5;
        for (unsigned w = 0u; w < warps; ++w) total += aether_warp_sums[w];
    }
    __syncthreads();
    return total;
}

// How many threads before this one (in thread order) have `flag` set, and in
// `total` how many threads of the block have it set.
__device__ __forceinline__ unsigned aether_block_rank(bool flag, unsigned& total) {
    __shared__ unsigned aether_warp_counts[32];
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
    const unsigned ballot = __ballot_sync(0xffffffffu, flag);
    if (lane == 0u) aether_warp_counts[warp] = __popc(ballot);
    __syncthreads();
    const unsigned warps = (blockDim.x + 31u) >> 5;
    unsigned before = 0u, sum = 0u;
    for (unsigned w = 0u; w < warps; ++w) {
        const unsigned count = aether_warp_counts[w];
        before += w < warp ? count : 0u;
        sum += count;
    }
    __syncthreads();
    total = sum;
    return before + __popc(ballot & ((1u << lane) - 1u));
}

// Sets bit `bit` of the bitmap at `bits` (32-bit words, zeroed before the kernel).
__device__ __forceinline__ void aether_set_bit(unsigned long long bits, unsigned long long bit) {
    atomicOr(((unsigned*)bits) + (bit >> 5), 1u << (bit & 31ULL));
}
