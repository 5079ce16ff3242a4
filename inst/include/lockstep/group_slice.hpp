// A rank's slice of a program by groups (DESIGN.md, "Ownership"; issue 35):
// what one shard of a run evaluates when shards own their groups' local
// parameters instead of each holding the whole state.
//
// Given a planned program holding the rank's own rows, a grouping of them
// (ownership.hpp) and the contiguous range of groups [first, end) the rank
// owns, the slice is a program whose free state holds every global
// coordinate and only the rank's rows of each local parameter. Everything
// computed from a local parameter row by row in the global stage (the
// non-centred sigma_alpha * z_alpha, sweep(z_gamma, 2, sigma_gamma, "*")),
// the group-level data and gathers beside it, and its prior terms, are cut to
// those rows; the observation stage's gathers by the grouping's index are
// renumbered into them. Terms of global parameters alone (their priors, their
// log |Jacobian|) count on one rank only (global_terms).
//
// Then, over ranks that together own every group once, the slices' log
// densities add up to the whole program's, so do the gradients' global
// coordinates, and each local coordinate's gradient is its owner's: what the
// ranks must exchange per gradient is the log density and the globals' part
// of the gradient, independent of the number of rows and groups.
#ifndef LOCKSTEP_GROUP_SLICE_HPP
#define LOCKSTEP_GROUP_SLICE_HPP

#include <string>
#include <vector>

#include "ir.hpp"
#include "ownership.hpp"

namespace lockstep {

struct GroupSlice {
  Program program;              // planned, ready to run; not for planning again
  long first_group = 0, end_group = 0;
  // Per coordinate of the slice's free state, its index in the whole
  // program's: the global coordinates first, in the program's order (the
  // slice keeps each parameter's place), then the local rows.
  std::vector<long> full_index;
  // The first n_global coordinates of the slice's state are global (the same
  // on every rank), the rest local.
  long n_global = 0;
  // The local parameters' node ids (the same in the program and the slice).
  std::vector<int> locals;

  // `rows` rows of the whole program's coordinates ([rows, full_dim]: states
  // of each chain, a per-chain metric) as the slice's [rows, slice dim].
  std::vector<double> of_whole(const double* whole, long rows, long full_dim) const {
    const long D = static_cast<long>(full_index.size());
    std::vector<double> out(rows * D);
    for (long r = 0; r < rows; ++r)
      for (long j = 0; j < D; ++j) out[r * D + j] = whole[r * full_dim + full_index[j]];
    return out;
  }
};

// Whether any of `nodes` of `p` is computed from any of the parameter nodes
// `locals` (tracing only global values needs no local coordinates).
bool depends_on_any(const Program& p, const std::vector<int>& nodes, const std::vector<int>& locals);

// Whether `grouping` of planned `p` can be sliced, and if not, why (a local
// parameter whose group-level companions are computed in ways a slice cannot
// cut): empty when it can.
std::string why_not_sliceable(const Program& p, const Grouping& grouping);

// Of `found` (find_groupings(p)), the sliceable grouping with the most local
// coordinates (their count in *size, when given), or nullptr: the one that
// shards of `p` own.
const Grouping* largest_sliceable_grouping(const Program& p, const std::vector<Grouping>& found,
                                           long* size = nullptr);

// The free coordinates of planned `p` that are not local to the grouping
// shards of it own (largest_sliceable_grouping()), increasing: those a slice
// of it keeps on every rank (GroupSlice::full_index's first n_global). Empty
// when no grouping can be sliced.
std::vector<long> global_coordinates(const Program& p);

// The slice of planned `p` (this rank's rows) owning groups [first, end) of
// `grouping` (one of find_groupings(p)), with the terms of global parameters
// alone when `global_terms`. Throws std::invalid_argument when a row of `p`
// belongs to a group outside [first, end) (the rows were split across ranks
// inside a group) or when the grouping cannot be sliced (why_not_sliceable()).
GroupSlice slice_groups(const Program& p, const Grouping& grouping, long first, long end,
                        bool global_terms);

// Contiguous ranges of the groups of `group_of_row` (0-based, < groups) for
// `shards` shards, balanced by row count: shard s owns groups
// [bounds[s], bounds[s + 1]), bounds[0] = 0, bounds[shards] = groups.
std::vector<long> balanced_group_bounds(const std::vector<long>& group_of_row, long groups,
                                        int shards);

}  // namespace lockstep

#endif
