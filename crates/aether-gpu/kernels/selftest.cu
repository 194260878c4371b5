// The `aether doctor` self-test: a TPC-H Q6-shaped filter and sum over integers, so the
// GPU result must equal the CPU's exactly.
//
// revenue = sum(price * discount) over rows with quantity < 24 and 5 <= discount <= 7.
// Each thread accumulates a grid-stride slice, warps reduce with shuffles, and one
// atomic per warp adds into the 64-bit total (two's complement, so signed sums work).
extern "C" __global__ void aether_selftest_q6(const long long* __restrict__ price,
                                              const int* __restrict__ discount,
                                              const int* __restrict__ quantity,
                                              long long rows,
                                              unsigned long long* __restrict__ revenue) {
    long long sum = 0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += stride) {
        const int d = discount[i];
        if (quantity[i] < 24 && d >= 5 && d <= 7) {
            sum += price[i] * d;
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(revenue, (unsigned long long)sum);
    }
}
