// Sort kernels (GpuSortExec, ops/gpu_sort.rs). Not generated: one source for every sort.
//
// Every sort key becomes one 64-bit word per row whose unsigned order is the key's
// order (signed integers, dates and narrow decimals with the sign bit flipped; 128-bit
// decimals as two words, the high half signed and the low half unsigned; floats
// in Arrow's total order, NaN above +inf and -0.0 below 0.0; strings as the rank of
// their dictionary code among the dictionary's sorted values; DESC as the complement),
// and a nullable key one more word before it holding where its NULLs go. The rows are
// then sorted as a permutation by a least-significant-digit radix sort over the words,
// last key first, 8 bits a pass: a pass is a per-tile histogram, an exclusive scan of
// the counts laid out digit-major (so equal digits keep their tile order) and a
// scatter that ranks each row within its tile by warp ballots, which keeps the sort
// stable. Passes over bits that are equal in every row are skipped: the encoder folds
// each word's OR and AND over all rows for the host to read.

typedef unsigned long long u64;
typedef unsigned int u32;

#define SORT_RADIX 256
#define SORT_THREADS 256
#define SORT_WARPS (SORT_THREADS / 32)
#define SORT_TILE 4096
#define SCAN_ITEMS 8
#define SCAN_BLOCK (SORT_THREADS * SCAN_ITEMS)

// Key kinds (`KeyKind` in ops/sort_kernels.rs).
#define KEY_SIGNED 0  // 1, 2, 4 or 8-byte signed integers (dates, narrow decimals)
#define KEY_FLOAT32 1
#define KEY_FLOAT64 2
#define KEY_BOOLEAN 3 // bit-packed
#define KEY_RANKED 4  // u32 dictionary codes, ordered through ranks[code]
#define KEY_WIDE_HIGH 5 // the high (signed) half of 16-byte two's complement values
#define KEY_WIDE_LOW 6  // their low (unsigned) half

__device__ __forceinline__ bool sort_valid(u64 bits, long long row) {
    return bits == 0ULL || ((((const unsigned char*)bits)[row >> 3] >> (row & 7)) & 1);
}

__device__ __forceinline__ u64 sort_float_bits(u64 bits, int sign_bit) {
    const u64 sign = 1ULL << sign_bit;
    // Negative values (sign set) reverse; positive ones move above them.
    return (bits & sign) ? (~bits & ((sign << 1) - 1)) : (bits | sign);
}

// One key column as `value_word[row]` and, for a nullable key (`null_word` not 0),
// `null_word[row]`: 0 for rows that sort first. `or_and` gets each word's OR and AND
// over all rows ([0], [1] for values; [2], [3] for NULLs), from 0 and ~0.
extern "C" __global__ void aether_sort_encode(long long rows, u64 values, u64 valid, long long kind,
                                              long long width, const u32* __restrict__ ranks,
                                              long long descending, long long nulls_first,
                                              u64* __restrict__ value_word,
                                              u64* __restrict__ null_word,
                                              u64* __restrict__ or_and) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    // Whole warps run every iteration, so the folds' shuffles see every lane.
    const long long end = (rows + 31) / 32 * 32;
    for (long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x; row < end; row += stride) {
        const bool in = row < rows;
        const bool is_valid = in && sort_valid(valid, row);
        u64 word = 0;
        if (is_valid) {
            switch (kind) {
                case KEY_SIGNED: {
                    long long v;
                    switch (width) {
                        case 1: v = ((const signed char*)values)[row]; break;
                        case 2: v = ((const short*)values)[row]; break;
                        case 4: v = ((const int*)values)[row]; break;
                        default: v = ((const long long*)values)[row]; break;
                    }
                    word = (u64)v ^ (1ULL << 63);
                    break;
                }
                case KEY_FLOAT32:
                    word = sort_float_bits(((const u32*)values)[row], 31);
                    break;
                case KEY_FLOAT64:
                    word = sort_float_bits(((const u64*)values)[row], 63);
                    break;
                case KEY_BOOLEAN:
                    word = (((const unsigned char*)values)[row >> 3] >> (row & 7)) & 1;
                    break;
                case KEY_WIDE_HIGH:
                    word = ((const u64*)values)[2 * row + 1] ^ (1ULL << 63);
                    break;
                case KEY_WIDE_LOW:
                    word = ((const u64*)values)[2 * row];
                    break;
                default:
                    word = ranks[((const u32*)values)[row]];
                    break;
            }
            if (descending) word = ~word;
        }
        const u64 nulls = is_valid ? (nulls_first ? 1ULL : 0ULL) : (nulls_first ? 0ULL : 1ULL);
        if (in) {
            value_word[row] = word;
            if (null_word) null_word[row] = nulls;
        }
        // Neutral values for lanes past the end: 0 for OR, ~0 for AND.
        u64 any = in ? word : 0ULL, all = in ? word : ~0ULL;
        u64 null_any = in ? nulls : 0ULL, null_all = in ? nulls : ~0ULL;
        for (int step = 16; step > 0; step >>= 1) {
            any |= __shfl_xor_sync(0xffffffffu, any, step);
            all &= __shfl_xor_sync(0xffffffffu, all, step);
            null_any |= __shfl_xor_sync(0xffffffffu, null_any, step);
            null_all &= __shfl_xor_sync(0xffffffffu, null_all, step);
        }
        if ((threadIdx.x & 31) == 0) {
            atomicOr(or_and, any);
            atomicAnd(or_and + 1, all);
            atomicOr(or_and + 2, null_any);
            atomicAnd(or_and + 3, null_all);
        }
    }
}

// The digit of the row at position `i` of the permutation (identity when `perm` is 0).
__device__ __forceinline__ u32 sort_digit(const u64* __restrict__ words, const u32* perm,
                                          long long i, long long shift, u32* row_out) {
    const u32 row = perm ? perm[i] : (u32)i;
    *row_out = row;
    return (u32)((words[row] >> shift) & (SORT_RADIX - 1));
}

// Per-tile digit counts: counts[digit * tiles + tile]. One block a tile.
extern "C" __global__ void aether_sort_histogram(long long rows, const u64* __restrict__ words,
                                                 const u32* __restrict__ perm, long long shift,
                                                 u32* __restrict__ counts, long long tiles) {
    __shared__ u32 hist[SORT_RADIX];
    for (int d = threadIdx.x; d < SORT_RADIX; d += blockDim.x) hist[d] = 0;
    __syncthreads();
    const long long tile = blockIdx.x;
    const long long start = tile * SORT_TILE;
    const long long end = min(rows, start + SORT_TILE);
    for (long long i = start + threadIdx.x; i < end; i += blockDim.x) {
        u32 row;
        atomicAdd(&hist[sort_digit(words, perm, i, shift, &row)], 1u);
    }
    __syncthreads();
    for (int d = threadIdx.x; d < SORT_RADIX; d += blockDim.x) counts[(long long)d * tiles + tile] = hist[d];
}

// Moves each row to its place for this digit: offsets (the scanned counts) give each
// tile's first position per digit; within a tile, rows keep their order. Needs
// SORT_THREADS threads a block.
extern "C" __global__ void aether_sort_scatter(long long rows, const u64* __restrict__ words,
                                               const u32* __restrict__ perm_in, long long shift,
                                               const u32* __restrict__ offsets, long long tiles,
                                               u32* __restrict__ perm_out) {
    __shared__ u32 base[SORT_RADIX];
    __shared__ u32 warp_counts[SORT_WARPS][SORT_RADIX];
    const long long tile = blockIdx.x;
    const long long start = tile * SORT_TILE;
    const long long end = min(rows, start + SORT_TILE);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    for (int d = threadIdx.x; d < SORT_RADIX; d += blockDim.x) base[d] = offsets[(long long)d * tiles + tile];
    for (long long round = start; round < end; round += SORT_THREADS) {
        for (int k = threadIdx.x; k < SORT_WARPS * SORT_RADIX; k += blockDim.x) (&warp_counts[0][0])[k] = 0;
        __syncthreads();
        const long long i = round + threadIdx.x;
        const bool active = i < end;
        u32 row = 0, digit = 0;
        if (active) digit = sort_digit(words, perm_in, i, shift, &row);
        // The lanes of this warp holding the same digit.
        u32 peers = __ballot_sync(0xffffffffu, active);
        for (int bit = 0; bit < 8; ++bit) {
            const bool set = (digit >> bit) & 1;
            const u32 with = __ballot_sync(0xffffffffu, set);
            peers &= set ? with : ~with;
        }
        const u32 rank = __popc(peers & ((1u << lane) - 1u));
        if (active && rank == 0) warp_counts[warp][digit] = __popc(peers);
        __syncthreads();
        if (active) {
            u32 before = base[digit] + rank;
            for (int w = 0; w < warp; ++w) before += warp_counts[w][digit];
            perm_out[before] = row;
        }
        __syncthreads();
        for (int d = threadIdx.x; d < SORT_RADIX; d += blockDim.x) {
            u32 sum = 0;
            for (int w = 0; w < SORT_WARPS; ++w) sum += warp_counts[w][d];
            base[d] += sum;
        }
        __syncthreads();
    }
}

// Exclusive scan of `n` u32s in place, SCAN_BLOCK a block; each block's total goes to
// sums[block] (the host scans those and adds them back with aether_scan_add).
extern "C" __global__ void aether_scan_blocks(long long n, u32* __restrict__ data, u32* __restrict__ sums) {
    __shared__ u32 warp_totals[SORT_WARPS];
    const long long first = (long long)blockIdx.x * SCAN_BLOCK + (long long)threadIdx.x * SCAN_ITEMS;
    u32 items[SCAN_ITEMS];
    u32 total = 0;
    for (int k = 0; k < SCAN_ITEMS; ++k) {
        const long long i = first + k;
        items[k] = i < n ? data[i] : 0u;
        total += items[k];
    }
    // Inclusive scan of the threads' totals: within the warp, then across warps.
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    u32 inclusive = total;
    for (int step = 1; step < 32; step <<= 1) {
        const u32 other = __shfl_up_sync(0xffffffffu, inclusive, step);
        if (lane >= step) inclusive += other;
    }
    if (lane == 31) warp_totals[warp] = inclusive;
    __syncthreads();
    u32 warp_base = 0;
    for (int w = 0; w < warp; ++w) warp_base += warp_totals[w];
    u32 running = warp_base + inclusive - total;
    for (int k = 0; k < SCAN_ITEMS; ++k) {
        const long long i = first + k;
        if (i < n) data[i] = running;
        running += items[k];
    }
    if (threadIdx.x == blockDim.x - 1) sums[blockIdx.x] = warp_base + inclusive;
}

// Adds each block's scanned offset to its SCAN_BLOCK values.
extern "C" __global__ void aether_scan_add(long long n, u32* __restrict__ data, const u32* __restrict__ offsets) {
    const long long first = (long long)blockIdx.x * SCAN_BLOCK;
    const u32 add = offsets[blockIdx.x];
    for (int k = threadIdx.x; k < SCAN_BLOCK; k += blockDim.x) {
        const long long i = first + k;
        if (i < n) data[i] += add;
    }
}
