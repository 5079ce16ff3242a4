// R's view of the backends: what was built, which CUDA devices are visible, and
// a direct door to the CUDA elementwise kernels for the tests in tests/gpu/.
#include <Rcpp.h>

#include <string>

// declarations only: their definitions exist where LOCKSTEP_HAS_CUDA is defined
#include "lockstep/backends/cuda.hpp"
#include "lockstep/ir.hpp"

// [[Rcpp::export]]
Rcpp::List ls_backend_info() {
#ifdef LOCKSTEP_HAS_CUDA
  const bool built = true;
  const bool nccl = lockstep::cuda::nccl_available();
  const int runtime = lockstep::cuda::runtime_version();
  const std::vector<lockstep::cuda::DeviceInfo> devs = lockstep::cuda::devices();
#else
  const bool built = false;
  const bool nccl = false;
  const int runtime = NA_INTEGER;
  const std::vector<int> devs;
#endif
  const R_xlen_t n = static_cast<R_xlen_t>(devs.size());
  Rcpp::IntegerVector id(n), multiprocessors(n);
  Rcpp::CharacterVector name(n), compute_capability(n);
  Rcpp::NumericVector memory_gb(n);
#ifdef LOCKSTEP_HAS_CUDA
  for (R_xlen_t i = 0; i < n; ++i) {
    const lockstep::cuda::DeviceInfo& d = devs[static_cast<size_t>(i)];
    id[i] = d.id;
    name[i] = d.name;
    compute_capability[i] = std::to_string(d.major) + "." + std::to_string(d.minor);
    memory_gb[i] = d.memory_gb;
    multiprocessors[i] = d.multiprocessors;
  }
#endif
  Rcpp::DataFrame devices = Rcpp::DataFrame::create(
      Rcpp::Named("id") = id, Rcpp::Named("name") = name,
      Rcpp::Named("compute_capability") = compute_capability,
      Rcpp::Named("memory_gb") = memory_gb, Rcpp::Named("multiprocessors") = multiprocessors,
      Rcpp::Named("stringsAsFactors") = false);
  return Rcpp::List::create(Rcpp::Named("cuda_built") = built,
                            Rcpp::Named("cuda_runtime_version") = runtime,
                            Rcpp::Named("devices") = devices, Rcpp::Named("nccl") = nccl);
}

// y = op(a) for a unary op, or op(a, b) for a binary op (a and b of one
// length), computed by the CUDA backend's kernels on device 0.
// [[Rcpp::export]]
Rcpp::NumericVector ls_cuda_elementwise(std::string op, Rcpp::NumericVector a,
                                        Rcpp::Nullable<Rcpp::NumericVector> b = R_NilValue) {
  const lockstep::Op o = lockstep::op_from_name(op);
  const lockstep::OpFamily family = lockstep::op_family(o);
  if (family == lockstep::OpFamily::unary) {
    if (b.isNotNull()) Rcpp::stop("op '%s' is unary: b must be NULL", op);
  } else if (family == lockstep::OpFamily::binary) {
    if (b.isNull()) Rcpp::stop("op '%s' is binary: b is missing", op);
    if (Rcpp::NumericVector(b.get()).size() != a.size()) {
      Rcpp::stop("op '%s': a and b must have the same length (no broadcasting here)", op);
    }
  } else {
    Rcpp::stop("op '%s' is not an elementwise (unary or binary) op", op);
  }
#ifndef LOCKSTEP_HAS_CUDA
  Rcpp::stop(lockstep::cuda::built_without_cuda);
  return Rcpp::NumericVector(0);
#else
  if (lockstep::cuda::devices().empty()) {
    Rcpp::stop("no CUDA device is visible (lockstep was built with CUDA, but the runtime "
               "finds no GPU or no driver)");
  }
  const long n = static_cast<long>(a.size());
  Rcpp::NumericVector y(a.size());
  if (family == lockstep::OpFamily::unary) {
    lockstep::cuda::elementwise_unary(o, a.begin(), y.begin(), n);
  } else {
    Rcpp::NumericVector bv(b.get());
    lockstep::cuda::elementwise_binary(o, a.begin(), bv.begin(), y.begin(), n);
  }
  return y;
#endif
}
