// A few C entry points over the reference FSST (cwida/fsst) for benchmarks/reference_fsst.py.
//
// The reference's C API takes arrays of string pointers and lengths, and its decoder
// (fsst_decompress) is an inline function of fsst.h, which ctypes cannot call. These wrappers
// take Arrow's layout (one data buffer, int64 offsets), so Python makes one call per column:
// no Python work per string is timed. They are compiled with the reference's sources into one
// shared library by reference_fsst.build(); the reference itself is never copied into this
// repository.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fsst.h"

extern "C" {

// Bumped when an entry point changes, so a library built from an older shim is refused.
int fsstref_abi_version() { return 1; }

// Train a symbol table on the n strings (fsst_create: the reference samples them itself) and
// compress them into out[0, cap). Writes code offsets (n + 1 of them) and the table as
// fsst_export serialises it into table (FSST_MAXHEADER bytes). Returns the codes' byte count,
// or -1 when out is too small, -2 when the encoder could not be made.
int64_t fsstref_compress(size_t n, const uint8_t* data, const int64_t* offsets, size_t cap,
                         uint8_t* out, int64_t* out_offsets, uint8_t* table,
                         uint32_t* table_len) {
    std::vector<size_t> len_in(n), len_out(n);
    std::vector<const unsigned char*> str_in(n);
    std::vector<unsigned char*> str_out(n);
    for (size_t i = 0; i < n; i++) {
        str_in[i] = data + offsets[i];
        len_in[i] = static_cast<size_t>(offsets[i + 1] - offsets[i]);
    }
    // fsst_create reads one string even when n is 0 (it samples max(n, 1)): give it an empty one.
    static const unsigned char nothing = 0;
    size_t empty_len = 0;
    const unsigned char* empty_str = &nothing;
    fsst_encoder_t* encoder = n ? fsst_create(n, len_in.data(), str_in.data(), 0)
                                : fsst_create(1, &empty_len, &empty_str, 0);
    if (encoder == nullptr) return -2;
    size_t done = fsst_compress(encoder, n, len_in.data(), str_in.data(), cap, out,
                                len_out.data(), str_out.data());
    *table_len = fsst_export(encoder, table);
    fsst_destroy(encoder);
    if (done != n) return -1;
    // The reference writes the strings one after the other: offsets follow from the lengths.
    int64_t pos = 0;
    out_offsets[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (str_out[i] != out + pos) return -1;  // not contiguous: this wrapper is wrong
        pos += static_cast<int64_t>(len_out[i]);
        out_offsets[i + 1] = pos;
    }
    return pos;
}

// Decode the n compressed strings (codes between code offsets) with the table that
// fsstref_compress exported, one after the other into out[0, cap), one fsst_decompress call
// per string. Writes the n + 1 output offsets; returns the decoded byte count, -1 when out is
// too small, -2 when the table does not import.
int64_t fsstref_decompress(const uint8_t* table, size_t n, const uint8_t* codes,
                           const int64_t* code_offsets, size_t cap, uint8_t* out,
                           int64_t* out_offsets) {
    fsst_decoder_t decoder;
    if (fsst_import(&decoder, table) == 0) return -2;
    size_t pos = 0;
    out_offsets[0] = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = fsst_decompress(&decoder, static_cast<size_t>(code_offsets[i + 1] -
                                                                   code_offsets[i]),
                                     codes + code_offsets[i], cap - pos, out + pos);
        pos += len;
        if (pos > cap) return -1;
        out_offsets[i + 1] = static_cast<int64_t>(pos);
    }
    return static_cast<int64_t>(pos);
}

}  // extern "C"
