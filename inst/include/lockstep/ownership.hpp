// Ownership (DESIGN.md, "Devices and communication"): which variables are
// local to a grouping of an observation extent's rows, so that a shard can
// own its groups' slice of them (seed 000's sharded variables).
//
// A parameter is local to a grouping when
//   - every use of it in the observation stage reads it by a row gather with
//     one index: gather_rows, a row dot product's group slopes b or gathered
//     offset q (the planner's fusions of gamma[g, ] and alpha_g[g]), or a
//     gather of one element per row; possibly through elementwise ops in the
//     global stage that keep its rows apart: unary ops, and binary ops whose
//     other operand is a scalar, a row vector broadcast down its rows (the
//     non-centred sigma_alpha * z_alpha and sweep(z_gamma, 2, sigma_gamma,
//     "*")), group-level data, or itself; and
//   - its prior factorises over the groups given the global variables: every
//     other use is a density term whose inputs are it (elementwise, as
//     above), scalars, or values that do not depend on it (product_a ~
//     normal(category_a[cat_of_product], s): category_a stays global, and its
//     adjoint from those terms is reduced like any global's).
// What cannot be shown local is global: sharding never changes a result
// beyond the order of sums. The analysis only reads a planned program.
#ifndef LOCKSTEP_OWNERSHIP_HPP
#define LOCKSTEP_OWNERSHIP_HPP

#include <vector>

#include "ir.hpp"

namespace lockstep {

// A grouping of an extent's rows and the parameters local to it.
struct Grouping {
  int extent = -1;
  std::vector<long> group_of_row;  // the extent's rows' groups, 0-based
  long groups = 0;                 // the rows of every local parameter
  std::vector<int> locals;         // their param nodes, in program order
};

// The groupings of a planned program (plan()), each with at least one local
// parameter, in the order of their first local.
std::vector<Grouping> find_groupings(const Program& p);

}  // namespace lockstep

#endif
