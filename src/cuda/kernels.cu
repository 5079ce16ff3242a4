// Every kernel body of the executor (kernels/*.hpp), instantiated for the
// device. Nothing here runs yet: the CUDA executor comes with issue 4. Its
// purpose now is that nvcc compiles each body, and all the LS_HD math it calls
// (every op and every distribution), as device code in every build with nvcc,
// so that code which only works on the host fails `make check` instead of
// failing on the first GPU it meets.
#include "lockstep/backends/cuda_launch.cuh"
#include "lockstep/kernels/axis_sum.hpp"
#include "lockstep/kernels/concat.hpp"
#include "lockstep/kernels/cumulative.hpp"
#include "lockstep/kernels/density.hpp"
#include "lockstep/kernels/elementwise.hpp"
#include "lockstep/kernels/fold.hpp"
#include "lockstep/kernels/gather.hpp"
#include "lockstep/kernels/matmul.hpp"
#include "lockstep/kernels/param.hpp"
#include "lockstep/kernels/reduce.hpp"
#include "lockstep/kernels/rowdot.hpp"
#include "lockstep/kernels/transpose.hpp"

namespace lockstep {
namespace cuda {

#define LS_DEVICE_BODY(...) template __global__ void lanes_kernel<__VA_ARGS__>(__VA_ARGS__);

LS_DEVICE_BODY(UnaryForward<double>)
LS_DEVICE_BODY(UnaryBackward<double>)
LS_DEVICE_BODY(BinaryForward<double>)
LS_DEVICE_BODY(BinaryBackward<double>)
LS_DEVICE_BODY(ChainSum<SumTerm<double>>)
LS_DEVICE_BODY(SumBackward<double>)
LS_DEVICE_BODY(RowSumForward<double>)
LS_DEVICE_BODY(RowSumBackward<double>)
LS_DEVICE_BODY(ColSumForward<double>)
LS_DEVICE_BODY(ColSumBackward<double>)
LS_DEVICE_BODY(MatmulForward<double>)
LS_DEVICE_BODY(MatmulBackwardA<double>)
LS_DEVICE_BODY(MatmulBackwardB<double>)
LS_DEVICE_BODY(TransposeForward<double>)
LS_DEVICE_BODY(TransposeBackward<double>)
LS_DEVICE_BODY(GatherForward<double>)
LS_DEVICE_BODY(GatherBackward<double>)
LS_DEVICE_BODY(GatherRowsForward<double>)
LS_DEVICE_BODY(GatherRowsBackward<double>)
LS_DEVICE_BODY(ParamForward<double>)
LS_DEVICE_BODY(ChainSum<ParamJacobianTerm>)
LS_DEVICE_BODY(ParamBackward<double>)
#define LS_DIST(name, n_params, continuous) \
  LS_DEVICE_BODY(ChainSum<DensityTerm<double, Family::name>>)
#include "lockstep/distributions.def"
#undef LS_DIST
LS_DEVICE_BODY(RowDotForward<double>)
LS_DEVICE_BODY(RowDotBackward<double>)
LS_DEVICE_BODY(FoldForward<double>)
LS_DEVICE_BODY(FoldBackward<double>)
LS_DEVICE_BODY(CumulativeForward<double>)
LS_DEVICE_BODY(CumulativeBackward<double>)
LS_DEVICE_BODY(ConcatForward<double>)
LS_DEVICE_BODY(ConcatBackward<double>)

#undef LS_DEVICE_BODY

}  // namespace cuda
}  // namespace lockstep
