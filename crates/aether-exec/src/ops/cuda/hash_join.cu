// Hash join kernels (GpuHashJoinExec, ops/join_table.rs) and the column gathers that
// assemble its output (ops/gather.rs). Not generated: one source for every join.
//
// Keys of any count are first normalized to 64-bit words per row (signed integers,
// dates and narrow decimals sign-extended), so the table, the probe and the equality
// test never depend on the key types. The build side inserts its row numbers (plus
// one; 0 is an empty slot) into an open-addressing table with linear probing; rows
// with equal keys take separate slots, so a probe walks its run of slots until an
// empty one and meets every duplicate. Rows with a NULL key are never inserted and
// never match.
//
// A probe batch runs twice, as stream compaction does: a count kernel (each block one
// contiguous chunk of the batch) sums how many output rows its chunk emits; the host
// turns the sums into each block's first output row; the write kernel walks its chunk
// again 256 rows at a time, ranks each row's output rows within the tile (a block
// scan) and writes pairs of row numbers (probe row, build row), AETHER_NO_ROW where
// an outer join pads with NULLs.

typedef unsigned long long u64;
typedef unsigned int u32;

#define AETHER_NO_ROW 0xffffffffu

// What a probe row emits (the join type, seen from the probe side).
#define EMIT_MATCHES 0      // inner, and left outer / left semi / left anti (with marks)
#define EMIT_MATCHES_OR_PAD 1 // right outer and full outer
#define EMIT_IF_ANY 2       // right semi
#define EMIT_IF_NONE 3      // right anti
#define EMIT_NOTHING 4      // left semi and left anti: only the marks

__device__ __forceinline__ bool join_valid(u64 bits, long long row) {
    return bits == 0ULL || ((((const unsigned char*)bits)[row >> 3] >> (row & 7)) & 1);
}

__device__ __forceinline__ void join_set_bit(u64 bits, long long bit) {
    atomicOr(((u32*)bits) + (bit >> 5), 1u << (bit & 31));
}

__device__ __forceinline__ u64 join_mix(u64 x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

__device__ __forceinline__ u64 join_hash(const u64* __restrict__ words, int keys) {
    u64 h = 0x9e3779b97f4a7c15ULL;
    for (int k = 0; k < keys; ++k) h = join_mix(h ^ words[k]) + 0x9e3779b97f4a7c15ULL;
    return h;
}

__device__ __forceinline__ bool join_equal(const u64* __restrict__ a, const u64* __restrict__ b, int keys) {
    for (int k = 0; k < keys; ++k) {
        if (a[k] != b[k]) return false;
    }
    return true;
}

// Key column k of a batch (`values[k]`, `valid[k]`, `widths[k]` bytes, signed) as
// words[row * keys + k]; usable[row] is 0 where some key is NULL.
extern "C" __global__ void aether_join_keys(long long rows, long long keys,
                                            const u64* __restrict__ values,
                                            const u64* __restrict__ valid,
                                            const int* __restrict__ widths,
                                            u64* __restrict__ words,
                                            unsigned char* __restrict__ usable) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x; row < rows; row += stride) {
        bool ok = true;
        for (int k = 0; k < keys; ++k) {
            const u64 column = values[k];
            long long v;
            switch (widths[k]) {
                case 1: v = ((const signed char*)column)[row]; break;
                case 2: v = ((const short*)column)[row]; break;
                case 4: v = ((const int*)column)[row]; break;
                default: v = ((const long long*)column)[row]; break;
            }
            words[row * keys + k] = (u64)v;
            ok = ok && join_valid(valid[k], row);
        }
        usable[row] = ok ? 1 : 0;
    }
}

// Inserts every usable build row into `slots` (a power of two, `mask` + 1 of them,
// zeroed, at least twice the rows).
extern "C" __global__ void aether_join_build(long long rows, long long keys,
                                             const u64* __restrict__ words,
                                             const unsigned char* __restrict__ usable,
                                             u32* __restrict__ slots, u64 mask) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x; row < rows; row += stride) {
        if (!usable[row]) continue;
        u64 slot = join_hash(words + row * keys, keys) & mask;
        while (atomicCAS(slots + slot, 0u, (u32)row + 1u) != 0u) slot = (slot + 1) & mask;
    }
}

// The build rows matching probe row `row`: their count, and (with `matched`) marks.
__device__ __forceinline__ u64 join_count_matches(long long row, int keys,
                                                  const u64* __restrict__ probe_words,
                                                  const unsigned char* __restrict__ probe_usable,
                                                  const u64* __restrict__ build_words,
                                                  const u32* __restrict__ slots, u64 mask,
                                                  unsigned char* __restrict__ matched) {
    if (!probe_usable[row]) return 0;
    const u64* key = probe_words + row * keys;
    u64 slot = join_hash(key, keys) & mask;
    u64 count = 0;
    for (u32 entry = slots[slot]; entry != 0u; slot = (slot + 1) & mask, entry = slots[slot]) {
        const u32 build = entry - 1u;
        if (join_equal(key, build_words + (u64)build * keys, keys)) {
            ++count;
            if (matched) matched[build] = 1;
        }
    }
    return count;
}

__device__ __forceinline__ u64 join_emitted(u64 matches, int emit) {
    switch (emit) {
        case EMIT_MATCHES: return matches;
        case EMIT_MATCHES_OR_PAD: return matches ? matches : 1;
        case EMIT_IF_ANY: return matches ? 1 : 0;
        case EMIT_IF_NONE: return matches ? 0 : 1;
        default: return 0;
    }
}

// Stores the sum of every thread's `mine` as counts[blockIdx.x]. Every thread of the
// block must call it.
__device__ __forceinline__ void join_store_block_count(u64 mine, u64* __restrict__ counts) {
    __shared__ u64 block_total;
    if (threadIdx.x == 0) block_total = 0;
    __syncthreads();
    atomicAdd(&block_total, mine);
    __syncthreads();
    if (threadIdx.x == 0) counts[blockIdx.x] = block_total;
}

// Each block's count of output rows for rows b * chunk .. (b + 1) * chunk; marks the
// matched build rows when `matched` is given.
extern "C" __global__ void aether_join_count(long long rows, long long chunk, long long keys, long long emit,
                                             const u64* __restrict__ probe_words,
                                             const unsigned char* __restrict__ probe_usable,
                                             const u64* __restrict__ build_words,
                                             const u32* __restrict__ slots, u64 mask,
                                             unsigned char* __restrict__ matched,
                                             u64* __restrict__ counts) {
    const long long begin = (long long)blockIdx.x * chunk;
    const long long end = min(rows, begin + chunk);
    u64 mine = 0;
    for (long long row = begin + threadIdx.x; row < end; row += blockDim.x) {
        const u64 matches = join_count_matches(row, keys, probe_words, probe_usable,
                                               build_words, slots, mask, matched);
        mine += join_emitted(matches, emit);
    }
    join_store_block_count(mine, counts);
}

// The sum of `v` over the threads before this one in the block, and in `total` over
// the whole block. Every thread must call it.
__device__ __forceinline__ u64 join_block_exclusive_sum(u64 v, u64& total) {
    __shared__ u64 warp_sums[32];
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
    u64 inclusive = v;
    for (unsigned offset = 1; offset < 32; offset <<= 1) {
        const u64 other = __shfl_up_sync(0xffffffffu, inclusive, offset);
        if (lane >= offset) inclusive += other;
    }
    if (lane == 31u) warp_sums[warp] = inclusive;
    __syncthreads();
    const unsigned warps = (blockDim.x + 31u) >> 5;
    u64 before = 0, sum = 0;
    for (unsigned w = 0; w < warps; ++w) {
        const u64 s = warp_sums[w];
        before += w < warp ? s : 0;
        sum += s;
    }
    __syncthreads();
    total = sum;
    return before + inclusive - v;
}

// Writes the pairs of the rows of each block's chunk from bases[block] on.
// `build_rows` may be null (semi and anti joins emit probe rows only).
extern "C" __global__ void aether_join_write(long long rows, long long chunk, long long keys, long long emit,
                                             const u64* __restrict__ probe_words,
                                             const unsigned char* __restrict__ probe_usable,
                                             const u64* __restrict__ build_words,
                                             const u32* __restrict__ slots, u64 mask,
                                             const u64* __restrict__ bases,
                                             u32* __restrict__ probe_rows,
                                             u32* __restrict__ build_rows) {
    const long long begin = (long long)blockIdx.x * chunk;
    const long long end = min(rows, begin + chunk);
    u64 base = bases[blockIdx.x];
    for (long long tile = begin; tile < end; tile += blockDim.x) {
        const long long row = tile + threadIdx.x;
        u64 matches = 0, emitted = 0;
        if (row < end) {
            matches = join_count_matches(row, keys, probe_words, probe_usable, build_words,
                                         slots, mask, 0);
            emitted = join_emitted(matches, emit);
        }
        u64 tile_total;
        u64 out = base + join_block_exclusive_sum(emitted, tile_total);
        if (emitted > 0) {
            if (emit == EMIT_IF_ANY || emit == EMIT_IF_NONE || matches == 0) {
                probe_rows[out] = (u32)row;
                if (build_rows) build_rows[out] = AETHER_NO_ROW;
            } else {
                const u64* key = probe_words + row * keys;
                u64 slot = join_hash(key, keys) & mask;
                for (u32 entry = slots[slot]; entry != 0u; slot = (slot + 1) & mask, entry = slots[slot]) {
                    const u32 build = entry - 1u;
                    if (join_equal(key, build_words + (u64)build * keys, keys)) {
                        probe_rows[out] = (u32)row;
                        build_rows[out] = build;
                        ++out;
                    }
                }
            }
        }
        base += tile_total;
    }
}

// dst[dst_offset + i] = src[rows[i]] for `width`-byte values (rows null: rows[i] = i);
// AETHER_NO_ROW leaves a NULL. `dst_valid` (0 when the output has no bitmap) is zeroed.
extern "C" __global__ void aether_gather(long long n, const u32* __restrict__ rows,
                                         long long dst_offset, long long width,
                                         u64 src, u64 src_valid, u64 dst, u64 dst_valid) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const u32 from = rows ? rows[i] : (u32)i;
        if (from == AETHER_NO_ROW) continue;
        const long long to = dst_offset + i;
        switch (width) {
            case 1: ((unsigned char*)dst)[to] = ((const unsigned char*)src)[from]; break;
            case 2: ((unsigned short*)dst)[to] = ((const unsigned short*)src)[from]; break;
            case 4: ((u32*)dst)[to] = ((const u32*)src)[from]; break;
            case 8: ((u64*)dst)[to] = ((const u64*)src)[from]; break;
            default:
                ((u64*)dst)[2 * to] = ((const u64*)src)[2 * (u64)from];
                ((u64*)dst)[2 * to + 1] = ((const u64*)src)[2 * (u64)from + 1];
                break;
        }
        if (dst_valid && join_valid(src_valid, from)) join_set_bit(dst_valid, to);
    }
}

// As aether_gather for bit-packed booleans; `dst` is zeroed.
extern "C" __global__ void aether_gather_bits(long long n, const u32* __restrict__ rows,
                                              long long dst_offset,
                                              u64 src, u64 src_valid, u64 dst, u64 dst_valid) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const u32 from = rows ? rows[i] : (u32)i;
        if (from == AETHER_NO_ROW) continue;
        const long long to = dst_offset + i;
        if ((((const unsigned char*)src)[from >> 3] >> (from & 7)) & 1) join_set_bit(dst, to);
        if (dst_valid && join_valid(src_valid, from)) join_set_bit(dst_valid, to);
    }
}

// Residual filters (ops/join_filter.rs). A join with a non-equality condition first
// emits every key match as a pair; the condition's kernel writes a keep byte per pair;
// then the kept pairs set their probe row's flag and mark their build row, and the
// selections below keep the pairs, probe rows or padded rows the join type returns.

// For each kept pair i: probe_flags[probe_rows[i]] = 1 and matched[build_rows[i]] = 1
// (either may be null).
extern "C" __global__ void aether_join_filter_marks(long long n,
                                                    const unsigned char* __restrict__ keep,
                                                    const u32* __restrict__ probe_rows,
                                                    const u32* __restrict__ build_rows,
                                                    unsigned char* __restrict__ probe_flags,
                                                    unsigned char* __restrict__ matched) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if (!keep[i]) continue;
        if (probe_flags) probe_flags[probe_rows[i]] = 1;
        if (matched) matched[build_rows[i]] = 1;
    }
}

__device__ __forceinline__ bool join_selected(const unsigned char* __restrict__ flags, long long i, long long want) {
    return (flags[i] != 0) == (want != 0);
}

// Each block's count of the i in its chunk whose flag is `want` (0 or 1).
extern "C" __global__ void aether_select_count(long long n, long long chunk,
                                               const unsigned char* __restrict__ flags,
                                               long long want, u64* __restrict__ counts) {
    const long long begin = (long long)blockIdx.x * chunk;
    const long long end = min(n, begin + chunk);
    u64 mine = 0;
    for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) mine += join_selected(flags, i, want);
    join_store_block_count(mine, counts);
}

// Writes, for each selected i of each block's chunk from dst_offset + bases[block] on,
// dst_a[out] = a ? a[i] : i and (when dst_b is given) dst_b[out] = b ? b[i] : NO_ROW.
extern "C" __global__ void aether_select_write(long long n, long long chunk,
                                               const unsigned char* __restrict__ flags,
                                               long long want, const u64* __restrict__ bases,
                                               long long dst_offset,
                                               const u32* __restrict__ a, const u32* __restrict__ b,
                                               u32* __restrict__ dst_a, u32* __restrict__ dst_b) {
    const long long begin = (long long)blockIdx.x * chunk;
    const long long end = min(n, begin + chunk);
    u64 base = dst_offset + bases[blockIdx.x];
    for (long long tile = begin; tile < end; tile += blockDim.x) {
        const long long i = tile + threadIdx.x;
        const u64 selected = i < end && join_selected(flags, i, want) ? 1 : 0;
        u64 tile_total;
        const u64 out = base + join_block_exclusive_sum(selected, tile_total);
        if (selected) {
            dst_a[out] = a ? a[i] : (u32)i;
            if (dst_b) dst_b[out] = b ? b[i] : AETHER_NO_ROW;
        }
        base += tile_total;
    }
}
