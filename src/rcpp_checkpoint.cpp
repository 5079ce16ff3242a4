// What checkpoints (R/checkpoint.R) need of C++ beyond the sampler's state
// (ls_sampler_state(), rcpp_engine.cpp): a checksum of the bytes R writes,
// so that a truncated or damaged file is refused rather than read.
#include <Rcpp.h>

#include <cstdint>
#include <cstdio>
#include <string>

using namespace Rcpp;

// FNV-1a, 64 bits, of a raw vector, as 16 hexadecimal digits: a checksum
// (not a cryptographic hash) of a checkpoint's parts and of a model's graph
// and data (its identity). R 4.2's tools::md5sum() reads files only, and
// hashing the serialised bytes before they are written keeps the file and
// its checksum in one atomic write.
// [[Rcpp::export]]
std::string ls_checksum(RawVector bytes) {
  uint64_t h = 1469598103934665603ull;
  const Rbyte* p = RAW(bytes);
  const R_xlen_t n = Rf_xlength(bytes);
  for (R_xlen_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}
