// Strings read on the device as Arrow keeps them: a row's string is the `n` bytes at
// `s` (from a column's i32 offsets and bytes). Everything here follows Arrow's string
// kernels: comparisons are bytewise (UTF-8's bytewise order is its code point order),
// LIKE's '%' matches any run of characters and '_' exactly one character (one UTF-8
// code point, a newline included). Patterns with the escape character '\' are not
// compiled to the device (see `codegen/expr/string_bytes.rs`).

// Bytes of the UTF-8 character whose first byte is `lead`.
__device__ __forceinline__ int aether_utf8_width(unsigned char lead) {
    return lead < 0xC0u ? 1 : (lead < 0xE0u ? 2 : (lead < 0xF0u ? 3 : 4));
}

// Whether byte `at` of `s` starts a character (is not a UTF-8 continuation byte).
__device__ __forceinline__ bool aether_utf8_starts(const unsigned char* s, int at) {
    return (s[at] & 0xC0u) != 0x80u;
}

// The byte position `chars` characters after byte `at` of `s`, at most `n`.
__device__ __forceinline__ int aether_utf8_advance(const unsigned char* s, int n, int at, long long chars) {
    for (; chars > 0 && at < n; --chars) at += aether_utf8_width(s[at]);
    return at < n ? at : n;
}

// -1, 0 or 1 comparing two strings bytewise, a prefix before the longer string.
__device__ int aether_str_cmp(const unsigned char* a, int an, const unsigned char* b, int bn) {
    const int n = an < bn ? an : bn;
    for (int i = 0; i < n; ++i) {
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    }
    return (an > bn) - (an < bn);
}

__device__ bool aether_str_eq(const unsigned char* a, int an, const unsigned char* b, int bn) {
    if (an != bn) return false;
    for (int i = 0; i < an; ++i) {
        if (a[i] != b[i]) return false;
    }
    return true;
}

__device__ __forceinline__ bool aether_starts_with(const unsigned char* s, int n, const unsigned char* p, int m) {
    return m <= n && aether_str_eq(s, m, p, m);
}

__device__ __forceinline__ bool aether_ends_with(const unsigned char* s, int n, const unsigned char* p, int m) {
    return m <= n && aether_str_eq(s + (n - m), m, p, m);
}

// Matches a LIKE pattern piece without '%' (bytes and '_') at byte `at` of `s`:
// where the match ends, or -1.
__device__ int aether_like_piece(const unsigned char* s, int n, int at, const unsigned char* p, int m) {
    for (int k = 0; k < m; ++k) {
        if (at >= n) return -1;
        if (p[k] == '_') {
            at += aether_utf8_width(s[at]);
        } else {
            if (s[at] != p[k]) return -1;
            ++at;
        }
    }
    return at <= n ? at : -1;
}

// Whether the pattern piece `p` (no '%') holds a '_'.
__device__ __forceinline__ bool aether_like_has_any(const unsigned char* p, int m) {
    for (int k = 0; k < m; ++k) {
        if (p[k] == '_') return true;
    }
    return false;
}

// `s LIKE p`. The pattern is cut at each '%' into pieces: the first piece is anchored
// at the start, the last at the end, and each piece between matches at its leftmost
// place after the one before (a piece spans a fixed number of characters, so an
// earlier start never ends later and leftmost leaves the most room).
__device__ bool aether_like(const unsigned char* s, int n, const unsigned char* p, int m) {
    int end = 0;
    while (end < m && p[end] != '%') ++end;
    if (end == m) return aether_like_piece(s, n, 0, p, m) == n;
    int at = aether_like_piece(s, n, 0, p, end);
    if (at < 0) return false;
    int piece = end + 1;
    while (true) {
        end = piece;
        while (end < m && p[end] != '%') ++end;
        const int len = end - piece;
        if (end == m) {
            if (len == 0) return true;
            if (!aether_like_has_any(p + piece, len)) {
                return n - len >= at && aether_str_eq(s + (n - len), len, p + piece, len);
            }
            for (int start = at; start < n; ++start) {
                if (aether_utf8_starts(s, start) &&
                    aether_like_piece(s, n, start, p + piece, len) == n) return true;
            }
            return false;
        }
        if (len > 0) {
            int found = -1;
            for (int start = at; start < n && found < 0; ++start) {
                if (aether_utf8_starts(s, start)) found = aether_like_piece(s, n, start, p + piece, len);
            }
            if (found < 0) return false;
            at = found;
        }
        piece = end + 1;
    }
}
