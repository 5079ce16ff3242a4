// The planner (DESIGN.md, "Execution").
//
// plan() validates a program, marks the nodes that carry the chain dimension
// (every node that depends on a parameter, and every density), and splits the
// program into two stages:
//
// - the observation stage: nodes row-aligned with an observation extent of R
//   rows, i.e. whose row r depends only on row r of other row-aligned nodes and
//   on global values (data with R rows; elementwise ops of them, broadcasting
//   global scalars; X %*% beta with beta global; gathers alpha[group] from a
//   global alpha; the likelihood terms over them, and the per-element log
//   densities, logpdf, that mixture() and joint() build their terms from).
//   The executor runs them tile
//   by tile, so no [chains, R] buffer exists.
// - the global stage: everything else, op by op over whole values.
//
// The extents are the row counts of the data that likelihood terms are
// assigned to. A node is only put in the observation stage when that is
// provably correct: all its inputs are row-aligned with the same extent or are
// global values of an allowed kind, and all its consumers are in the
// observation stage of the same extent. Everything else stays global, so
// tiling never changes a result beyond floating-point reassociation. Ops the
// rules below do not name are global.
//
// Before that, plan() fuses rowSums(a * b[index, ]) (rowsum of a product with
// a row gather, neither used elsewhere) into one rowdot_rows node, then an
// added a %*% v and offset into it (the linear predictor of a hierarchical
// regression as one op), and marks the nodes the log density depends on as
// live.
#ifndef LOCKSTEP_PLANNER_HPP
#define LOCKSTEP_PLANNER_HPP

#include "ir.hpp"

namespace lockstep {

struct PlanOptions {
  // false: every node stays in the global stage (the plain op-by-op executor).
  bool observation_stage = true;
  // Fuse rowSums(a * b[index, ]) into one rowdot_rows node (no rows x cols
  // intermediates), and a %*% v + offset and an offset's gather q[index] into
  // it; the fused-away nodes stay, dead, for tracing.
  bool fuse = true;
};

void plan(Program& p, PlanOptions options = PlanOptions());

// Marks live the nodes the log density depends on: the parameters (their log
// Jacobians), the terms and what they read; every other node dead. plan()
// calls it; so does shard_program() (shards.hpp) after it drops terms.
void mark_live(Program& p);

}  // namespace lockstep

#endif
