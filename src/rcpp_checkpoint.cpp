// What checkpoints (R/checkpoint.R) need of C++ beyond the sampler's state
// (ls_sampler_state(), rcpp_engine.cpp): a checksum of the R objects a
// checkpoint writes, so that a truncated or damaged file is refused rather
// than read, and of a model's graph and data (its identity).
#include <Rcpp.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

using namespace Rcpp;

namespace {

constexpr uint64_t fnv_prime = 1099511628211ull;

// FNV-1a over n bytes, a 64-bit word at a time (then the tail byte by byte):
// a checksum, not a cryptographic hash, at several GB/s, so that the 300 MB
// state of a model of two million parameters costs a tenth of a second.
uint64_t mix_bytes(uint64_t h, const unsigned char* p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * fnv_prime;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * fnv_prime;
  return h;
}

uint64_t mix_number(uint64_t h, uint64_t x) {
  return mix_bytes(h, reinterpret_cast<const unsigned char*>(&x), sizeof x);
}

// The checksum of an R object's contents: its type, length and values, its
// elements for a list, and its attributes (names, dims, classes), whatever
// byte order or format R wrote it in. Functions and environments count by
// their type alone (a checkpoint holds none that matter).
uint64_t mix_object(uint64_t h, SEXP x) {
  h = mix_number(h, static_cast<uint64_t>(TYPEOF(x)));
  switch (TYPEOF(x)) {
    case NILSXP:
      return h;
    case SYMSXP: {
      const char* s = CHAR(PRINTNAME(x));
      return mix_bytes(h, reinterpret_cast<const unsigned char*>(s), std::strlen(s));
    }
    case LGLSXP:
    case INTSXP:
      h = mix_number(h, static_cast<uint64_t>(XLENGTH(x)));
      h = mix_bytes(h, reinterpret_cast<const unsigned char*>(INTEGER(x)),
                    sizeof(int) * static_cast<size_t>(XLENGTH(x)));
      break;
    case REALSXP:
      h = mix_number(h, static_cast<uint64_t>(XLENGTH(x)));
      h = mix_bytes(h, reinterpret_cast<const unsigned char*>(REAL(x)),
                    sizeof(double) * static_cast<size_t>(XLENGTH(x)));
      break;
    case CPLXSXP:
      h = mix_number(h, static_cast<uint64_t>(XLENGTH(x)));
      h = mix_bytes(h, reinterpret_cast<const unsigned char*>(COMPLEX(x)),
                    sizeof(Rcomplex) * static_cast<size_t>(XLENGTH(x)));
      break;
    case RAWSXP:
      h = mix_number(h, static_cast<uint64_t>(XLENGTH(x)));
      h = mix_bytes(h, RAW(x), static_cast<size_t>(XLENGTH(x)));
      break;
    case STRSXP:
      h = mix_number(h, static_cast<uint64_t>(XLENGTH(x)));
      for (R_xlen_t i = 0; i < XLENGTH(x); ++i) {
        SEXP s = STRING_ELT(x, i);
        if (s == NA_STRING) {
          h = mix_number(h, 0xFFFFFFFFFFFFFFFFull);
          continue;
        }
        h = mix_number(h, static_cast<uint64_t>(LENGTH(s)));
        h = mix_bytes(h, reinterpret_cast<const unsigned char*>(CHAR(s)),
                      static_cast<size_t>(LENGTH(s)));
      }
      break;
    case VECSXP:
    case EXPRSXP:
      h = mix_number(h, static_cast<uint64_t>(XLENGTH(x)));
      for (R_xlen_t i = 0; i < XLENGTH(x); ++i) h = mix_object(h, VECTOR_ELT(x, i));
      break;
    case LISTSXP:
    case LANGSXP:
      for (SEXP p = x; p != R_NilValue; p = CDR(p)) {
        h = mix_object(h, TAG(p));
        h = mix_object(h, CAR(p));
      }
      return h;
    default:
      return h;
  }
  // (pairlists of tags and values: names, dim, class, row.names, ...)
  for (SEXP a = ATTRIB(x); a != R_NilValue; a = CDR(a)) {
    h = mix_object(h, TAG(a));
    h = mix_object(h, CAR(a));
  }
  return h;
}

}  // namespace

// The checksum of an R object's contents (mix_object()), as 16 hexadecimal
// digits: what a checkpoint records of each file it writes and checks when
// it reads one back (R/checkpoint.R), and a model's identity. R 4.2's
// tools::md5sum() reads files only; hashing the objects themselves avoids
// serialising hundreds of megabytes into memory to hash them.
// [[Rcpp::export]]
std::string ls_checksum(SEXP x) {
  const uint64_t h = mix_object(1469598103934665603ull, x);
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}
