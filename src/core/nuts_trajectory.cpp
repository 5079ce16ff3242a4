// NUTS's trajectory builder (sampler/nuts_trajectory.hpp).
#include "lockstep/sampler/nuts_trajectory.hpp"

#include <algorithm>
#include <cmath>

#include "lockstep/math/binary.hpp"

namespace lockstep {

namespace {

// log(exp(a) + exp(b)) of two log weights: the engine's log_add_exp op's own
// scalar rule (math/binary.hpp), -Inf for an empty subtree.
double log_add_exp(double a, double b) { return Binary<Op::log_add_exp>::value(a, b); }

}  // namespace

void NutsTrajectory::ensure_vectors() {
  if (z_fwd_) return;
  ChainVectors& v = s_->vectors();
  for (double** a : {&z_fwd_, &p_fwd_, &g_fwd_, &z_bck_, &p_bck_, &g_bck_, &z_leaf_, &p_leaf_,
                     &g_leaf_, &z_propose_, &g_propose_, &p_propose_, &p_sample_, &p_fwd_fwd_,
                     &p_fwd_bck_, &p_bck_fwd_, &p_bck_bck_, &rho_, &rho_fwd_, &rho_bck_,
                     &subtree_p_first_, &subtree_rho_})
    *a = v.make();
  for (auto* v : {&lp_fwd_, &lp_bck_, &lp_leaf_, &lp_propose_}) v->assign(s_->C_, 0.0);
  if (!adaptive()) return;
  for (double** a : {&z_next_, &p_next_, &g_next_, &p_start_, &z_w_, &p_w_, &g_w_, &zeros_})
    *a = v.make();
  for (auto* v : {&lp_next_, &lp_w_}) v->assign(s_->C_, 0.0);
}

void NutsTrajectory::ensure_levels(int depth) {
  ChainVectors& v = s_->vectors();
  while (static_cast<int>(levels_.size()) < depth) {
    // level 0 never stores a left end (its left sibling's is level 1's begin)
    levels_.push_back(Level{levels_.empty() ? nullptr : v.make(), v.make()});
    starts_.push_back(Start{v.make(), v.make()});
  }
  start_of_.resize(levels_.size(), 0);
}

const double* NutsTrajectory::outer_begin(int j, int d) const {
  return j + 1 < d ? start(j + 1).begin : subtree_p_first_;
}

std::vector<int> NutsTrajectory::criteria(const Check* checks, int n, const ChainMask& on) {
  const long C = s_->C_;
  DotSpec specs[DotTerm::max_specs];
  for (int j = 0; j < n; ++j) {
    specs[2 * j] = DotSpec{checks[j].p_minus, checks[j].rho, checks[j].extra, DotKind::product};
    specs[2 * j + 1] = DotSpec{checks[j].p_plus, checks[j].rho, checks[j].extra, DotKind::product};
  }
  std::vector<double> d(C * 2 * n);
  s_->vectors().dots(specs, 2 * n, s_->m_v_, on, d.data());
  std::vector<int> ok(C, 0);
  for (long c = 0; c < C; ++c) {
    if (!on[c]) continue;
    ok[c] = 1;
    for (int k = 0; k < 2 * n; ++k)
      if (!(d[c * 2 * n + k] > 0)) ok[c] = 0;
  }
  return ok;
}

void NutsTrajectory::transition(HamiltonianSampler& s) {
  s_ = &s;
  ensure_vectors();
  s.sync_vectors();
  start();
  for (int d = 0; d < max_treedepth_; ++d) {
    if (all_done()) break;
    ensure_levels(d);
    choose_directions();
    build_subtree(d);
    // A cut trajectory ends as a tree of maximum depth d would have: the
    // draw stays the one made from the subtrees joined so far.
    if (s.was_cut()) break;
    join_subtrees();
  }
  finish();
  s.state_to_host();
}

void NutsTrajectory::start() {
  HamiltonianSampler& s = *s_;
  const long C = s.C_;
  ChainVectors& v = s.vectors();
  const ChainMask all = ChainMask::all(C);
  s.draw_momentum(p_sample_);  // the momentum of the draw, starting at the current point
  for (double* a : {z_fwd_, z_bck_}) v.copy(a, s.x_v_, all);
  for (double* a : {g_fwd_, g_bck_}) v.copy(a, s.g_v_, all);
  for (double* a : {p_fwd_, p_bck_, p_fwd_fwd_, p_fwd_bck_, p_bck_fwd_, p_bck_bck_, rho_})
    v.copy(a, p_sample_, all);
  lp_fwd_ = s.lp_, lp_bck_ = s.lp_;

  H0_.assign(C, 0.0);
  log_sum_weight_.assign(C, 0.0);
  log_sum_weight_subtree_.assign(C, -HUGE_VAL);
  sum_metro_prob_.assign(C, 0.0);
  for (auto* a : {&depth_, &done_, &building_, &valid_, &n_leapfrog_, &n_leaves_, &divergent_,
                  &moved_})
    a->assign(C, 0);
  direction_.assign(C, 1);
  merge_sums_.resize(C * 6);
  const std::vector<double> k = s.kinetic_energies(p_sample_, all);
  for (long c = 0; c < C; ++c) H0_[c] = -s.lp_[c] + k[c];
  H_fwd_ = H0_, H_bck_ = H0_, H_leaf_ = H0_, H_whole_ = H0_;
  for (auto* a : {&blocked_fwd_, &blocked_bck_, &micro_failed_}) a->assign(C, 0);
}

bool NutsTrajectory::all_done() const {
  return std::all_of(done_.begin(), done_.end(), [](int x) { return x != 0; });
}

void NutsTrajectory::choose_directions() {
  HamiltonianSampler& s = *s_;
  const long C = s.C_;
  ChainVectors& v = s.vectors();
  // Each chain still going draws its direction and starts its new subtree
  // at that end of its trajectory.
  forward_ = ChainMask();
  backward_ = ChainMask();
  for (long c = 0; c < C; ++c) {
    building_[c] = !done_[c];
    if (done_[c]) continue;
    valid_[c] = 1;
    log_sum_weight_subtree_[c] = -HUGE_VAL;
    Stream& stream = s.chain_streams_[c];
    stream.purpose = purpose_direction;
    direction_[c] = stream.uniform() > 0.5 ? 1 : -1;
    (direction_[c] > 0 ? forward_ : backward_).set(c);
    lp_leaf_[c] = direction_[c] > 0 ? lp_fwd_[c] : lp_bck_[c];
    H_leaf_[c] = direction_[c] > 0 ? H_fwd_[c] : H_bck_[c];
  }
  const ChainMask started = ChainMask::where(building_);
  v.copy(z_leaf_, z_fwd_, forward_), v.copy(p_leaf_, p_fwd_, forward_);
  v.copy(g_leaf_, g_fwd_, forward_);
  v.copy(z_leaf_, z_bck_, backward_), v.copy(p_leaf_, p_bck_, backward_);
  v.copy(g_leaf_, g_bck_, backward_);
  v.fill(subtree_rho_, 0.0, started);
}

void NutsTrajectory::build_subtree(int d) {
  HamiltonianSampler& s = *s_;
  const long C = s.C_;
  ChainVectors& v = s.vectors();
  const double eps = s.epsilon_;
  const long leaves = 1L << d;
  for (long k = 0; k < leaves; ++k) {
    ChainMask on = ChainMask::where(building_);
    if (!on.any()) break;
    // Cut short (set_cut_check()): the subtree being built is dropped.
    if (s.cut_short()) break;
    // Leapfrog: half kick and drift for every chain still building; the
    // others wait, their leaf unchanged. (WALNUTS: the new leaf beside the
    // old, which stays the start a split step starts from.)
    // Only in sampling: warmup's early step sizes and metrics fit badly
    // enough that most steps would split (earnings: 3x the warmup
    // gradients), and warmup has its own remedy for a stuck chain (rescue).
    const bool walnuts = adaptive() && !s.adapting_;
    double* z_new = walnuts ? z_next_ : z_leaf_;
    double* p_new = walnuts ? p_next_ : p_leaf_;
    double* g_new = walnuts ? g_next_ : g_leaf_;
    v.leapfrog(z_new, z_leaf_, p_leaf_, g_leaf_, s.m_v_, 0.5 * eps, eps, true, on, backward_);
    v.log_density(z_new, (walnuts ? lp_next_ : lp_leaf_).data(), g_new);
    // The second half kick and everything else this leaf does to the
    // vectors, in one pass (ChainVectors::leaf): the kinetic energy, the
    // subtree's rho, the blocks of leaves it starts, the left sibling it
    // completes, and the merge checks of the right siblings it completes
    // (up to LeafVectors::max_checks of them; the rest below). Which of
    // these a leaf does depends on k alone.
    LeafVectors lv{};
    lv.p = p_new, lv.g = g_new, lv.kick = 0.5 * eps, lv.sd = s.sd_v_, lv.S = subtree_rho_;
    if (walnuts) lv.p_from = p_leaf_;
    lv.first = k == 0 ? subtree_p_first_ : nullptr;
    int starts = 0;  // blocks of 2^j leaves starting at this leaf: j < starts
    while (starts < d && k % (1L << starts) == 0) ++starts;
    if (starts > 1) {
      // Levels 1 ... starts - 1 start here: one Start for them all, one that
      // no level still open above them holds.
      int free = 0;
      while (std::find(start_of_.begin() + starts, start_of_.begin() + d, free) !=
             start_of_.begin() + d)
        ++free;
      for (int j = 1; j < starts; ++j) start_of_[j] = free;
      lv.starts = 1;
      lv.begin[0] = starts_[free].begin;
      lv.prefix[0] = starts_[free].prefix;
    }
    // Blocks of 2^j leaves completed by this leaf: a right sibling for
    // j < merges, merged with its stored left sibling and checked; then a
    // left sibling (j = merges), stored. (A leaf that starts levels above 0
    // completes none but level 0's, so what it writes is not read here.)
    int merges = 0;
    while (merges < d && (k + 1) % (1L << merges) == 0 && ((k >> merges) & 1) == 1) ++merges;
    const bool stores_left = merges < d && (k + 1) % (1L << merges) == 0;
    auto subtree = [&](int j) {
      // the right sibling's rho is subtree_rho - prefix (SubtreeChecksTerm);
      // at level 0 it is this leaf alone (a null prefix: S - p)
      const double* left_begin = outer_begin(j, d);
      if (j == 0)
        return SubtreeVectors{subtree_rho_, nullptr, levels_[0].left_rho, left_begin,
                              p_new,        p_new,   left_begin};
      return SubtreeVectors{subtree_rho_, start(j).prefix, levels_[j].left_rho, left_begin,
                            p_new,        start(j).begin,  levels_[j].left_end};
    };
    lv.checks = std::min(merges, LeafVectors::max_checks);
    for (int j = 0; j < lv.checks; ++j) lv.check[j] = subtree(j);
    if (stores_left) {
      lv.left_end = levels_[merges].left_end;  // null at level 0
      lv.left_rho = levels_[merges].left_rho;
      lv.left_prefix = merges == 0 ? nullptr : start(merges).prefix;
    }
    const int n_sums = lv.sums();
    leaf_sums_.resize(C * n_sums);
    v.leaf(lv, s.m_v_, on, backward_, leaf_sums_.data());
    if (walnuts) {
      refine_leaves(lv, on);
      std::swap(z_leaf_, z_next_), std::swap(p_leaf_, p_next_), std::swap(g_leaf_, g_next_);
      std::swap(lp_leaf_, lp_next_);
    }
    ChainMask take;  // chains whose subtree's proposal becomes this leaf
    for (long c = 0; c < C; ++c) {
      if (!on[c]) continue;
      ++n_leapfrog_[c], ++n_leaves_[c];
      double H = -lp_leaf_[c] + 0.5 * leaf_sums_[c * n_sums];
      if (std::isnan(H) || micro_failed_[c]) H = HUGE_VAL;
      H_leaf_[c] = H;
      if (H - H0_[c] > divergence_threshold) divergent_[c] = 1;
      // the leaf's log weight: none past a step that is not reversible
      const double w = blocked(c) ? -HUGE_VAL : H0_[c] - H;
      // The acceptance statistic of warmup's step size is the step's as NUTS
      // took it, whole: split steps keep their energy error small whatever
      // the step size, so counting theirs would let the step size grow
      // until most steps were split (on kilpisjarvi, 6x the gradients).
      double u = walnuts ? H_whole_[c] : H;
      if (std::isnan(u)) u = HUGE_VAL;
      const double a = H0_[c] - u;
      sum_metro_prob_[c] += a > 0 ? 1 : std::exp(a);
      log_sum_weight_subtree_[c] = log_add_exp(log_sum_weight_subtree_[c], w);
      // streaming multinomial draw within the subtree
      Stream& stream = s.chain_streams_[c];
      stream.purpose = purpose_accept;
      if (w > -HUGE_VAL && stream.uniform() < std::exp(w - log_sum_weight_subtree_[c])) {
        take.set(c);
        lp_propose_[c] = lp_leaf_[c];
      }
    }
    v.copy(z_propose_, z_leaf_, take), v.copy(g_propose_, g_leaf_, take);
    v.copy(p_propose_, p_leaf_, take);
    for (long c = 0; c < C; ++c)
      if (on[c] && divergent_[c]) {
        valid_[c] = 0;
        building_[c] = 0;
        on.set(c, false);
      }
    auto positive = [](double x) { return x > 0; };
    for (int j = 0; j < merges && on.any(); ++j) {
      const double* six = leaf_sums_.data() + 1 + 6 * j;
      long stride = n_sums;
      if (j >= lv.checks) {
        v.subtree_checks(subtree(j), s.m_v_, on, merge_sums_.data());
        six = merge_sums_.data();
        stride = 6;
      }
      for (long c = 0; c < C; ++c)
        if (on[c] && !std::all_of(six + c * stride, six + c * stride + 6, positive)) {
          valid_[c] = 0;
          building_[c] = 0;
          on.set(c, false);
        }
    }
  }
}

std::vector<double> NutsTrajectory::micro_steps(const double* z, const double* p,
                                                const double* g, long n, double h,
                                                const ChainMask& on, const ChainMask& back) {
  HamiltonianSampler& s = *s_;
  ChainVectors& v = s.vectors();
  v.copy(z_w_, z, on), v.copy(p_w_, p, on), v.copy(g_w_, g, on);
  for (long i = 0; i < n; ++i) {
    // the half kick that ends one step merged with the next one's
    v.leapfrog(z_w_, z_w_, p_w_, g_w_, s.m_v_, i == 0 ? 0.5 * h : h, h, true, on, back);
    v.log_density(z_w_, lp_w_.data(), g_w_);
  }
  v.leapfrog(nullptr, nullptr, p_w_, g_w_, s.m_v_, 0.5 * h, 0.0, false, on, back);
  const std::vector<double> k = s.kinetic_energies(p_w_, on);
  std::vector<double> H(s.C_, NAN);
  for (long c = 0; c < s.C_; ++c)
    if (on[c]) H[c] = -lp_w_[c] + k[c];
  return H;
}

void NutsTrajectory::refine_leaves(const LeafVectors& lv, const ChainMask& on) {
  HamiltonianSampler& s = *s_;
  const long C = s.C_;
  ChainVectors& v = s.vectors();
  const double eps = s.epsilon_, delta = max_energy_error_;
  const int n_sums = lv.sums();
  // (a NaN energy is never within the error)
  auto within = [delta](double a, double b) { return std::fabs(a - b) < delta; };
  ChainMask split;  // chains whose one step's energy error is too large
  for (long c = 0; c < C; ++c) {
    micro_failed_[c] = 0;
    if (!on[c]) continue;
    H_whole_[c] = -lp_next_[c] + 0.5 * leaf_sums_[c * n_sums];
    if (!within(H_whole_[c], H_leaf_[c])) split.set(c);
  }
  if (!split.any()) return;
  // Undo the step's pass for them (its momentum out of the subtree's rho;
  // the rest of what it wrote, the pass below writes again), and rebuild
  // the start's momentum from the half step p_leaf_ holds.
  v.add(subtree_rho_, subtree_rho_, p_next_, -1, split);
  v.copy(p_start_, p_leaf_, split);
  v.leapfrog(nullptr, nullptr, p_start_, g_leaf_, s.m_v_, -0.5 * eps, 0.0, false, split,
             backward_);
  ChainMask refined;
  for (int depth = 1; depth <= max_micro_depth_ && split.any(); ++depth) {
    const long n = 1L << depth;
    const std::vector<double> H = micro_steps(z_leaf_, p_start_, g_leaf_, n, eps / n, split,
                                              backward_);
    ChainMask passed, check;
    for (long c = 0; c < C; ++c) {
      if (!split[c]) continue;
      n_leapfrog_[c] += static_cast<int>(n);
      if (!within(H[c], H_leaf_[c])) continue;
      passed.set(c);
      split.set(c, false);
      lp_next_[c] = lp_w_[c];
      // a leaf already of weight 0 needs no check
      if (!blocked(c)) check.set(c);
    }
    if (!passed.any()) continue;
    v.copy(z_next_, z_w_, passed), v.copy(p_next_, p_w_, passed), v.copy(g_next_, g_w_, passed);
    for (long c = 0; c < C; ++c)
      if (passed[c]) refined.set(c);
    // Reversible only if, from the end with the momentum reversed, no
    // smaller depth keeps the error down.
    ChainMask reversed;
    for (long c = 0; c < C; ++c)
      if (check[c] && !backward_[c]) reversed.set(c);
    for (int r = 0; r < depth && check.any(); ++r) {
      const long nr = 1L << r;
      const std::vector<double> Hr = micro_steps(z_next_, p_next_, g_next_, nr, eps / nr, check,
                                                 reversed);
      for (long c = 0; c < C; ++c) {
        if (!check[c]) continue;
        n_leapfrog_[c] += static_cast<int>(nr);
        if (!within(Hr[c], H[c])) continue;
        blocked(c) = 1;
        check.set(c, false);
      }
    }
  }
  for (long c = 0; c < C; ++c)
    if (split[c]) micro_failed_[c] = 1;
  if (!refined.any()) return;
  // the refined leaves' pass, their momentum final (a kick of zeros)
  LeafVectors redo = lv;
  redo.p_from = nullptr, redo.g = zeros_, redo.kick = 0.0;
  std::vector<double> sums(C * n_sums);
  v.leaf(redo, s.m_v_, refined, backward_, sums.data());
  for (long c = 0; c < C; ++c)
    if (refined[c])
      std::copy(sums.begin() + c * n_sums, sums.begin() + (c + 1) * n_sums,
                leaf_sums_.begin() + c * n_sums);
}

void NutsTrajectory::join_subtrees() {
  HamiltonianSampler& s = *s_;
  const long C = s.C_;
  ChainVectors& v = s.vectors();
  // Join each chain's new subtree to its trajectory; a U-turn or
  // divergence inside the subtree discards it and ends the chain's tree.
  ChainMask join_fwd, join_bck;
  for (long c = 0; c < C; ++c) {
    if (done_[c]) continue;
    if (!valid_[c]) {
      done_[c] = 1;
      continue;
    }
    (direction_[c] > 0 ? join_fwd : join_bck).set(c);
    (direction_[c] > 0 ? lp_fwd_ : lp_bck_)[c] = lp_leaf_[c];
    (direction_[c] > 0 ? H_fwd_ : H_bck_)[c] = H_leaf_[c];
  }
  v.copy(z_fwd_, z_leaf_, join_fwd), v.copy(p_fwd_, p_leaf_, join_fwd);
  v.copy(g_fwd_, g_leaf_, join_fwd);
  v.copy(z_bck_, z_leaf_, join_bck), v.copy(p_bck_, p_leaf_, join_bck);
  v.copy(g_bck_, g_leaf_, join_bck);
  // forward: the old trajectory is the backward part
  v.copy(p_bck_fwd_, p_fwd_fwd_, join_fwd), v.copy(rho_bck_, rho_, join_fwd);
  v.copy(p_fwd_bck_, subtree_p_first_, join_fwd);
  v.copy(p_fwd_fwd_, p_leaf_, join_fwd), v.copy(rho_fwd_, subtree_rho_, join_fwd);
  // backward: the old trajectory is the forward part
  v.copy(p_fwd_bck_, p_bck_bck_, join_bck), v.copy(rho_fwd_, rho_, join_bck);
  v.copy(p_bck_fwd_, subtree_p_first_, join_bck);
  v.copy(p_bck_bck_, p_leaf_, join_bck), v.copy(rho_bck_, subtree_rho_, join_bck);
  ChainMask joined, move;
  for (long c = 0; c < C; ++c) {
    if (!(join_fwd[c] || join_bck[c])) continue;
    joined.set(c);
    ++depth_[c];
    // Biased progressive sampling: favour the new subtree.
    Stream& stream = s.chain_streams_[c];
    stream.purpose = purpose_accept;
    if (log_sum_weight_subtree_[c] > log_sum_weight_[c] ||
        stream.uniform() < std::exp(log_sum_weight_subtree_[c] - log_sum_weight_[c])) {
      move.set(c);
      s.lp_[c] = lp_propose_[c];
      moved_[c] = 1;
    }
    log_sum_weight_[c] = log_add_exp(log_sum_weight_[c], log_sum_weight_subtree_[c]);
  }
  v.copy(s.x_v_, z_propose_, move), v.copy(s.g_v_, g_propose_, move);
  v.copy(p_sample_, p_propose_, move);
  v.add(rho_, rho_bck_, rho_fwd_, 1, joined);
  // The U-turn criterion across the whole trajectory, and Stan's two checks
  // across the merged parts
  const Check checks[3] = {{p_bck_bck_, p_fwd_fwd_, rho_, nullptr},
                           {p_bck_bck_, p_fwd_bck_, rho_bck_, p_fwd_bck_},
                           {p_bck_fwd_, p_fwd_fwd_, rho_fwd_, p_bck_fwd_}};
  const std::vector<int> persist = criteria(checks, 3, joined);
  for (long c = 0; c < C; ++c)
    if (joined[c] && !persist[c]) done_[c] = 1;
}

void NutsTrajectory::finish() {
  HamiltonianSampler& s = *s_;
  const long C = s.C_;
  const std::vector<double> k = s.kinetic_energies(p_sample_, ChainMask::all(C));
  for (long c = 0; c < C; ++c) {
    // (over the leaves: a split step's smaller steps are one leaf)
    s.stats_.accept_stat[c] = n_leaves_[c] > 0 ? sum_metro_prob_[c] / n_leaves_[c] : 0;
    s.stats_.n_leapfrog[c] = n_leapfrog_[c];
    s.stats_.tree_depth[c] = depth_[c];
    s.stats_.divergent[c] = divergent_[c];
    s.stats_.energy[c] = -s.lp_[c] + k[c];
    if (divergent_[c]) ++s.bad_[c];
    if (moved_[c]) ++s.accepted_[c];
  }
}

}  // namespace lockstep
