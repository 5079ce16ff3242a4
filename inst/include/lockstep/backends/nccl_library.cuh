// NCCL as the CUDA backend uses it: loaded with dlopen at run time, not
// linked, so that the package loads (and runs on one GPU) where the CUDA
// toolkit has no NCCL. Compiled only where configure found nccl.h (it then
// defines LOCKSTEP_HAS_NCCL); include only from .cu files.
//
// Users: the multi-GPU executor (src/cuda/multi_device_executor.cu) and the
// executor of a GPU rank of an MPI run (src/cuda/rank_executor.cu).
#ifndef LOCKSTEP_BACKENDS_NCCL_LIBRARY_CUH
#define LOCKSTEP_BACKENDS_NCCL_LIBRARY_CUH

#ifdef LOCKSTEP_HAS_NCCL

#include <dlfcn.h>
#include <nccl.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace lockstep {
namespace cuda {

// The NCCL entry points lockstep calls, from libnccl.so.2 loaded once; ok()
// is false when it is not there, lacks one of them, or LOCKSTEP_NCCL=no is
// set in the environment.
struct NcclLibrary {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommInitAll) comm_init_all = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclReduce) reduce = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;

  bool ok() const { return reduce != nullptr; }

  // (an inline function's static is one object in the whole library)
  static const NcclLibrary& get() {
    static const NcclLibrary library = load();
    return library;
  }

 private:
  static NcclLibrary load() {
    NcclLibrary l;
    const char* env = std::getenv("LOCKSTEP_NCCL");
    if (env && std::string(env) == "no") return l;
    void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) return l;
    auto sym = [&](auto& f, const char* name) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(h, name));
      return f != nullptr;
    };
    const bool all = sym(l.get_unique_id, "ncclGetUniqueId") &&
                     sym(l.comm_init_rank, "ncclCommInitRank") &&
                     sym(l.comm_init_all, "ncclCommInitAll") &&
                     sym(l.comm_destroy, "ncclCommDestroy") &&
                     sym(l.group_start, "ncclGroupStart") && sym(l.group_end, "ncclGroupEnd") &&
                     sym(l.broadcast, "ncclBroadcast") &&
                     sym(l.error_string, "ncclGetErrorString") && sym(l.reduce, "ncclReduce");
    if (!all) l = NcclLibrary();
    return l;
  }
};

// Throws std::runtime_error naming what failed and NCCL's own message.
inline void nccl_check(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess)
    throw std::runtime_error(std::string("lockstep NCCL: ") + what + ": " +
                             NcclLibrary::get().error_string(rc));
}

}  // namespace cuda
}  // namespace lockstep

#endif  // LOCKSTEP_HAS_NCCL

#endif
