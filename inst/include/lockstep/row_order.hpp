// The order of an observation extent's rows (DESIGN.md, "Execution"): rows
// sorted by the index of the extent's gather from the largest global value,
// so that gathers and their scatter-adds walk memory in order. The log density
// is a sum over rows, so only the reassociation of sums changes.
//
// The tiled observation stage copies its row data in this order; executors
// that run whole buffers (the CUDA executor) run a copy of the program whose
// rows are permuted (with_rows_ordered).
#ifndef LOCKSTEP_ROW_ORDER_HPP
#define LOCKSTEP_ROW_ORDER_HPP

#include <vector>

#include "ir.hpp"

namespace lockstep {

// perm[r'] = the original row that comes r'-th; the identity when the extent
// has no gather. `p` must be planned.
std::vector<long> row_order(const Program& p, int extent);
// Whether row_order(p, extent) is the identity (the rows come sorted
// already, as data made group by group do), found without making it.
bool rows_in_order(const Program& p, int extent);

// A copy of planned `p` in which every extent's rows come in row_order: its
// row data permuted, its gathers' indices permuted (and, where they read rows
// of the same extent, renumbered). The planner keeps every reader of a
// row-aligned value in its extent, so nothing else reads rows by position.
Program with_rows_ordered(const Program& p);

}  // namespace lockstep

#endif
