// Each row's dictionary entry looked up on the GPU (page_rows.py launches it; its CPU twin,
// page_rows.dictionary_lookup_cpu, is the NumPy code these rows must equal).
//
// A dictionary-encoded leaf of a file's fsst column (formats/page_columns.py): its pages'
// indices were decoded into `index`, each page's values placed from its first row, so row i's
// index is index[at[i]]; its page's row group g = page_group[page[i]] has counts[g] entries,
// which start at base[g] in the concatenation of the row groups' dictionaries (of `last` + 1
// entries, or one zero entry when there are none). A row of `rows` (it holds a value of a
// dictionary page) whose index is past its row group's entries sets *past; every entry is
// clipped into [0, last] before it is read, so an index from a damaged page reads a real entry
// (and is flagged) and nothing outside the arrays. out[i] = values[e] (and out2[i] = values2[e]
// where `two`) for the rows of `rows`, or for every row where `every`; the other rows' outputs
// are left as they are. The row indices (at, page) are the host's own (page_columns:
// each in 0..n-1 and 0..pages-1); the index values and the entries come from the file.

typedef unsigned char uint8_t;
typedef unsigned int uint32_t;
typedef long long i64;
typedef unsigned long long u64;

template <class T>
__device__ __forceinline__ void dictionary_lookup(
    i64 n, const uint8_t* __restrict__ rows, const uint32_t* __restrict__ index,
    const i64* __restrict__ at, const i64* __restrict__ page, const i64* __restrict__ page_group,
    const i64* __restrict__ counts, const i64* __restrict__ base, i64 last, int every, int two,
    const T* __restrict__ values, T* __restrict__ out, const T* __restrict__ values2,
    T* __restrict__ out2, int* __restrict__ past)
{
    const i64 stride = (i64)gridDim.x * blockDim.x;
    bool flagged = false;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const i64 g = page_group[page[i]];
        const i64 k = (i64)index[at[i]];
        const bool row = rows[i] != 0;
        flagged |= row && k >= counts[g];
        i64 e = base[g] + k;
        e = e < 0 ? 0 : (e > last ? last : e);
        if (row || every) {
            out[i] = values[e];
            if (two) out2[i] = values2[e];
        }
    }
    if (flagged) atomicOr(past, 1);
}

#define LOOKUP(name, T)                                                                        \
    extern "C" __global__ void name(                                                           \
        i64 n, const uint8_t* rows, const uint32_t* index, const i64* at, const i64* page,      \
        const i64* page_group, const i64* counts, const i64* base, i64 last, int every,        \
        int two, const T* values, T* out, const T* values2, T* out2, int* past)                \
    {                                                                                          \
        dictionary_lookup<T>(n, rows, index, at, page, page_group, counts, base, last, every,  \
                             two, values, out, values2, out2, past);                           \
    }

LOOKUP(dictionary_lookup_i32, int)
LOOKUP(dictionary_lookup_u32, uint32_t)
LOOKUP(dictionary_lookup_i64, i64)
LOOKUP(dictionary_lookup_u64, u64)
