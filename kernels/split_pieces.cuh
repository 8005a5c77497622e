// Pieces of splits for the planned call (included by fsst_decode.cu after window_pass1).
#pragma once

// A column's stored splits are balanced by output bytes, so their code bytes differ (dbtext at
// 4 MiB: 1,675 a split on average, 4,309 at most) and a launch of a few waves ends with the
// warps of its longest splits.  The planned call, from its second launch on, decodes pieces
// instead: split k becomes pieces [first[k], first[k + 1]), piece i > first[k] starting at
// the window base0 + (i - first[k]) * W (base0: the split's first code rounded down to 8; W a
// multiple of a window's 256 bytes), or one byte later where that byte is an escape's literal,
// so every piece starts at a code, as a split does.  Pieces decode exactly as splits do: each
// is a split of its own to the decode.
//
// split_pieces finds where they start: one warp per split walks the split's windows with the
// decode's first pass (output positions and the 0xFF parity, window_pass1) up to its last
// piece.  A split whose bounds lie outside the buffers, whose table does not exist, whose walk
// meets an undefined code or outputs past the split's range keeps one piece, the whole split,
// its other pieces empty: the decode then finds what it finds in the split.
extern "C" __global__ void __launch_bounds__(256) split_pieces(
    const u8 *__restrict__ codes, i64 ncodes, const i64 *__restrict__ split_codes,
    const i64 *__restrict__ split_out, const u16 *__restrict__ split_table, i64 nsplits,
    const u64 *__restrict__ tab_sym, const u8 *__restrict__ tab_len, int ntables,
    i64 out_size, const i64 *__restrict__ first, i64 W, i64 *__restrict__ piece_codes,
    i64 *__restrict__ piece_out) {
    constexpr u32 FULL = 0xffffffffu;
    constexpr int WBYTES = 32 * FSST_K;
    const i64 k = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const u32 lane = threadIdx.x & 31;
    if (k >= nsplits) return;
    const i64 cb = split_codes[k], ce = split_codes[k + 1];
    const i64 ob = split_out[k], oe = split_out[k + 1];
    const int t = split_table[k];
    const i64 pf = first[k], cuts = first[k + 1] - pf - 1;
    if (lane == 0) {
        piece_codes[pf] = cb;
        piece_out[pf] = ob;
        if (k == nsplits - 1) {
            piece_codes[pf + cuts + 1] = ce;
            piece_out[pf + cuts + 1] = oe;
        }
    }
    if (cuts <= 0) return;
    bool whole = !(0 <= cb && cb <= ce && ce <= ncodes && 0 <= ob && ob <= oe &&
                   oe <= out_size && t < ntables && W > 0 && W % WBYTES == 0);
    if (!whole) {
        const GlobalTable tab{tab_sym + (i64)t * 256, tab_len + (i64)t * 256};
        const i64 base0 = cb & ~(i64)(FSST_K - 1);
        u32 par = 0, esc_end = 0;  // the parity entering the window; (the split's end: unused)
        i64 A = ob;                // output position of the window's first byte
        i64 cut = 1, at = base0 + W;
        for (i64 base = base0; !whole; base += WBYTES) {
            if (base == at) {
                if (base >= ce) {  // a piece past the split (the host plans none)
                    whole = true;
                    break;
                }
                if (A + par > oe) {  // (a literal past the split's output)
                    whole = true;
                    break;
                }
                if (lane == 0) {  // the byte at base is a literal where the parity is odd
                    piece_codes[pf + cut] = base + par;
                    piece_out[pf + cut] = A + par;
                }
                if (++cut > cuts) break;
                at += W;
            }
            u32 iw[FSST_K / 2], bad;
            const u32 sum = window_pass1<FSST_K>(codes, cb, ce, base, tab, par, iw, bad, esc_end);
            whole = __any_sync(FULL, bad & FSST_LB_BAD);
            A += __reduce_add_sync(FULL, sum >> 3);
            whole = whole || A > oe;
        }
    }
    __syncwarp();
    if (whole) {  // lane 0 may have written some of these: the same warp, after a barrier
        for (i64 c = 1 + lane; c <= cuts; c += 32) {
            piece_codes[pf + c] = ce;
            piece_out[pf + c] = oe;
        }
    }
}
