// Stores that go past the caches, for a pass that writes a large array the
// thread will not read again soon: the first writers of a gradient
// (Executor::find_first_writers()). A store through the cache first reads
// each line it writes (and evicts data that will be read); these write the
// lines whole.
#ifndef LOCKSTEP_KERNELS_STREAM_STORE_HPP
#define LOCKSTEP_KERNELS_STREAM_STORE_HPP

namespace lockstep {

namespace detail {
#if !defined(__CUDA_ARCH__)
// Stores of more than this many bytes in one pass go past the caches
// (stream_store()): about the caches of the 2-core machine the seed model
// is timed on (bench/RESULTS.md), whose effective size is 60-100 MB.
constexpr long stream_bytes = 8L << 20;

// dst[0, n) = src[0, n), converted to D, with non-temporal stores (x86-64's
// movnti: any 4- or 8-byte aligned address; the write-combining buffers
// make whole lines of them), elsewhere (and in nvcc's host code, whose
// front end need not know GCC's builtins) plain stores.
template <class D, class S> inline void stream_store(D* dst, const S* src, long n) {
  static_assert(sizeof(D) == 8 || sizeof(D) == 4, "movnti stores 4 or 8 bytes");
#if defined(__x86_64__) && !defined(__CUDACC__)
  for (long i = 0; i < n; ++i) {
    const D v = static_cast<D>(src[i]);
    if constexpr (sizeof(D) == 8) {
      long long bits;
      __builtin_memcpy(&bits, &v, 8);
      __builtin_ia32_movnti64(reinterpret_cast<long long*>(dst + i), bits);
    } else {
      int bits;
      __builtin_memcpy(&bits, &v, 4);
      __builtin_ia32_movnti(reinterpret_cast<int*>(dst + i), bits);
    }
  }
#else
  for (long i = 0; i < n; ++i) dst[i] = static_cast<D>(src[i]);
#endif
}

// Orders the non-temporal stores before whatever the thread does next
// (another thread may add to the same values once this one is done).
inline void stream_fence() {
#if defined(__x86_64__) && !defined(__CUDACC__)
  __builtin_ia32_sfence();
#endif
}
#endif
}  // namespace detail

}  // namespace lockstep

#endif
