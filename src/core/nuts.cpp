// NUTS with lockstep chains (sampler/nuts.hpp).
#include "lockstep/sampler/nuts.hpp"

#include "lockstep/math/binary.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lockstep {

namespace {

NutsSettings checked(NutsSettings s) {
  if (s.max_treedepth < 1 || s.max_treedepth > 30)
    throw std::invalid_argument("nuts: max_treedepth must be between 1 and 30");
  return s;
}

// log(exp(a) + exp(b)) of two log weights: the engine's log_add_exp op's own
// scalar rule (math/binary.hpp), -Inf for an empty subtree.
double log_add_exp(double a, double b) { return Binary<Op::log_add_exp>::value(a, b); }

}  // namespace

Nuts::Nuts(Target& target, NutsSettings settings, const std::vector<double>& init, uint32_t key0,
           uint32_t key1)
    : Nuts(target, settings, init, key0, key1, "nuts") {}

Nuts::Nuts(Target& target, NutsSettings settings, const std::vector<double>& init, uint32_t key0,
           uint32_t key1, const std::string& name)
    : LeapfrogSampler(target, settings.epsilon, settings.diag_sd, settings.adapt_delta, init,
                      key0, key1, name, settings.per_chain_metric),
      settings_(checked(settings)) {
  harmonic_accept_ = true;
  vectors();  // refuses more chains than a ChainMask holds, before any work
  for (auto* v : {&lpf_, &lpb_, &lpw_, &lpp_}) v->assign(C_, 0.0);
}

void Nuts::ensure_vectors() {
  if (xf_) return;
  ChainVectors& v = vectors();
  for (double** a : {&xf_, &pf_, &gf_, &xb_, &pb_, &gb_, &xw_, &pw_, &gw_, &xp_, &gp_, &pp_, &ps_,
                     &p_ff_, &p_fb_, &p_bf_, &p_bb_, &rho_, &rho_f_, &rho_b_, &sub_first_,
                     &sub_rho_})
    *a = v.make();
}

void Nuts::ensure_levels(int depth) {
  ChainVectors& v = vectors();
  while (static_cast<int>(levels_.size()) < depth)
    levels_.push_back(Level{v.make(), v.make(), v.make(), v.make()});
}

std::vector<int> Nuts::criteria(const Check* checks, int n, const ChainMask& on) {
  DotSpec specs[DotTerm::max_specs];
  for (int j = 0; j < n; ++j) {
    specs[2 * j] = DotSpec{checks[j].p_minus, checks[j].rho, checks[j].extra, DotKind::product};
    specs[2 * j + 1] = DotSpec{checks[j].p_plus, checks[j].rho, checks[j].extra, DotKind::product};
  }
  std::vector<double> d(C_ * 2 * n);
  vectors().dots(specs, 2 * n, m_v_, on, d.data());
  std::vector<int> ok(C_, 0);
  for (long c = 0; c < C_; ++c) {
    if (!on[c]) continue;
    ok[c] = 1;
    for (int s = 0; s < 2 * n; ++s)
      if (!(d[c * 2 * n + s] > 0)) ok[c] = 0;
  }
  return ok;
}

std::unique_ptr<LeapfrogSampler> Nuts::make_group_sampler(Target& target,
                                                          const std::vector<double>& init,
                                                          const std::vector<double>& sd) const {
  NutsSettings s = settings_;
  s.epsilon = epsilon_;
  s.diag_sd = sd;
  return std::make_unique<Nuts>(target, s, init, 0, 0);
}

void Nuts::transition() {
  if (in_groups()) return transition_in_groups();
  const long C = C_;
  ensure_vectors();
  ChainVectors& v = vectors();
  sync_vectors();
  const ChainMask all = ChainMask::all(C);

  draw_momentum(ps_);  // the momentum of the draw, starting at the current point
  for (double* a : {xf_, xb_}) v.copy(a, x_v_, all);
  for (double* a : {gf_, gb_}) v.copy(a, g_v_, all);
  for (double* a : {pf_, pb_, p_ff_, p_fb_, p_bf_, p_bb_, rho_}) v.copy(a, ps_, all);
  lpf_ = lp_, lpb_ = lp_;

  std::vector<double> H0(C), lsw(C, 0.0), lsw_sub(C, -HUGE_VAL), sum_metro(C, 0.0);
  std::vector<int> depth(C, 0), done(C, 0), building(C, 0), valid(C, 0), dir(C, 1);
  std::vector<int> n_leap(C, 0), divergent(C, 0), moved(C, 0);
  std::vector<double> sums(C * 6);  // the merge checks' sums
  {
    const std::vector<double> k = kinetic_energies(ps_, all);
    for (long c = 0; c < C; ++c) H0[c] = -lp_[c] + k[c];
  }

  for (int d = 0; d < settings_.max_treedepth; ++d) {
    if (std::all_of(done.begin(), done.end(), [](int x) { return x != 0; })) break;
    ensure_levels(d);
    // Each chain still going draws its direction and starts its new subtree
    // at that end of its trajectory.
    ChainMask forward, backward;
    for (long c = 0; c < C; ++c) {
      building[c] = !done[c];
      if (done[c]) continue;
      valid[c] = 1;
      lsw_sub[c] = -HUGE_VAL;
      Stream& s = chain_streams_[c];
      s.purpose = purpose_direction;
      dir[c] = s.uniform() > 0.5 ? 1 : -1;
      (dir[c] > 0 ? forward : backward).set(c);
      lpw_[c] = dir[c] > 0 ? lpf_[c] : lpb_[c];
    }
    const ChainMask started = ChainMask::where(building);
    v.copy(xw_, xf_, forward), v.copy(pw_, pf_, forward), v.copy(gw_, gf_, forward);
    v.copy(xw_, xb_, backward), v.copy(pw_, pb_, backward), v.copy(gw_, gb_, backward);
    v.fill(sub_rho_, 0.0, started);

    const long leaves = 1L << d;
    for (long k = 0; k < leaves; ++k) {
      ChainMask on = ChainMask::where(building);
      if (!on.any()) break;
      // Cut short (set_cut_check()): the subtree being built is dropped below.
      if (cut_short()) break;
      // Leapfrog: half kick and drift for every chain still building; the
      // others wait, their moving point unchanged.
      v.leapfrog(xw_, xw_, pw_, gw_, m_v_, 0.5 * epsilon_, epsilon_, true, on, backward);
      v.log_density(xw_, lpw_.data(), gw_);
      // The second half kick and everything else this leaf does to the
      // vectors, in one pass (ChainVectors::leaf): the kinetic energy, the
      // subtree's rho, the blocks of leaves it starts, the left sibling it
      // completes, and the merge checks of the right siblings it completes
      // (up to LeafVectors::max_checks of them; the rest below). Which of
      // these a leaf does depends on k alone.
      LeafVectors lv{};
      lv.p = pw_, lv.g = gw_, lv.kick = 0.5 * epsilon_, lv.sd = sd_v_, lv.S = sub_rho_;
      lv.first = k == 0 ? sub_first_ : nullptr;
      int starts = 0;  // blocks of 2^j leaves starting at this leaf: j < starts
      while (starts < d && k % (1L << starts) == 0) ++starts;
      lv.starts = std::min(starts, LeafVectors::max_starts);
      for (int j = 0; j < lv.starts; ++j) {
        lv.begin[j] = levels_[j].begin;
        lv.prefix[j] = levels_[j].prefix;
      }
      // Blocks of 2^j leaves completed by this leaf: a right sibling for
      // j < merges, merged with its stored left sibling and checked; then a
      // left sibling (j = merges), stored.
      int merges = 0;
      while (merges < d && (k + 1) % (1L << merges) == 0 && ((k >> merges) & 1) == 1) ++merges;
      const bool stores_left = merges < d && (k + 1) % (1L << merges) == 0;
      auto subtree = [&](int j) {
        // the right sibling's rho is sub_rho - prefix (SubtreeChecksTerm)
        const Level& l = levels_[j];
        const double* left_begin = j + 1 < d ? levels_[j + 1].begin : sub_first_;
        return SubtreeVectors{sub_rho_, l.prefix, l.left_rho, left_begin, pw_, l.begin, l.left_end};
      };
      lv.checks = std::min(merges, LeafVectors::max_checks);
      for (int j = 0; j < lv.checks; ++j) lv.check[j] = subtree(j);
      if (stores_left) {
        lv.left_end = levels_[merges].left_end;
        lv.left_rho = levels_[merges].left_rho;
        lv.left_prefix = levels_[merges].prefix;
      }
      const int n_sums = lv.sums();
      leaf_sums_.resize(C * n_sums);
      v.leaf(lv, m_v_, on, backward, leaf_sums_.data());
      ChainMask take;  // chains whose subtree's proposal becomes this leaf
      for (long c = 0; c < C; ++c) {
        if (!on[c]) continue;
        ++n_leap[c];
        double H = -lpw_[c] + 0.5 * leaf_sums_[c * n_sums];
        if (std::isnan(H)) H = HUGE_VAL;
        if (H - H0[c] > divergence_threshold) divergent[c] = 1;
        const double w = H0[c] - H;  // the leaf's log weight
        sum_metro[c] += w > 0 ? 1 : std::exp(w);
        lsw_sub[c] = log_add_exp(lsw_sub[c], w);
        // streaming multinomial draw within the subtree
        Stream& s = chain_streams_[c];
        s.purpose = purpose_accept;
        if (w > -HUGE_VAL && s.uniform() < std::exp(w - lsw_sub[c])) {
          take.set(c);
          lpp_[c] = lpw_[c];
        }
      }
      v.copy(xp_, xw_, take), v.copy(gp_, gw_, take), v.copy(pp_, pw_, take);
      for (long c = 0; c < C; ++c)
        if (on[c] && divergent[c]) {
          valid[c] = 0;
          building[c] = 0;
          on.set(c, false);
        }
      // the starts beyond what one pass takes (only at k = 0 of deep trees)
      for (int j = lv.starts; j < starts; ++j) {
        v.copy(levels_[j].begin, pw_, on);
        v.add(levels_[j].prefix, sub_rho_, pw_, -1, on);
      }
      auto positive = [](double x) { return x > 0; };
      for (int j = 0; j < merges && on.any(); ++j) {
        const double* six = leaf_sums_.data() + 1 + 6 * j;
        long stride = n_sums;
        if (j >= lv.checks) {
          v.subtree_checks(subtree(j), m_v_, on, sums.data());
          six = sums.data();
          stride = 6;
        }
        for (long c = 0; c < C; ++c)
          if (on[c] && !std::all_of(six + c * stride, six + c * stride + 6, positive)) {
            valid[c] = 0;
            building[c] = 0;
            on.set(c, false);
          }
      }
    }

    // A cut trajectory ends as a tree of maximum depth d would have: the
    // draw stays the one made from the subtrees joined so far.
    if (was_cut()) break;

    // Join each chain's new subtree to its trajectory; a U-turn or
    // divergence inside the subtree discards it and ends the chain's tree.
    ChainMask join_f, join_b;
    for (long c = 0; c < C; ++c) {
      if (done[c]) continue;
      if (!valid[c]) {
        done[c] = 1;
        continue;
      }
      (dir[c] > 0 ? join_f : join_b).set(c);
      (dir[c] > 0 ? lpf_ : lpb_)[c] = lpw_[c];
    }
    v.copy(xf_, xw_, join_f), v.copy(pf_, pw_, join_f), v.copy(gf_, gw_, join_f);
    v.copy(xb_, xw_, join_b), v.copy(pb_, pw_, join_b), v.copy(gb_, gw_, join_b);
    // forward: the old trajectory is the backward part
    v.copy(p_bf_, p_ff_, join_f), v.copy(rho_b_, rho_, join_f), v.copy(p_fb_, sub_first_, join_f);
    v.copy(p_ff_, pw_, join_f), v.copy(rho_f_, sub_rho_, join_f);
    // backward: the old trajectory is the forward part
    v.copy(p_fb_, p_bb_, join_b), v.copy(rho_f_, rho_, join_b), v.copy(p_bf_, sub_first_, join_b);
    v.copy(p_bb_, pw_, join_b), v.copy(rho_b_, sub_rho_, join_b);
    ChainMask joined, move;
    for (long c = 0; c < C; ++c) {
      if (!(join_f[c] || join_b[c])) continue;
      joined.set(c);
      ++depth[c];
      // Biased progressive sampling: favour the new subtree.
      Stream& s = chain_streams_[c];
      s.purpose = purpose_accept;
      if (lsw_sub[c] > lsw[c] || s.uniform() < std::exp(lsw_sub[c] - lsw[c])) {
        move.set(c);
        lp_[c] = lpp_[c];
        moved[c] = 1;
      }
      lsw[c] = log_add_exp(lsw[c], lsw_sub[c]);
    }
    v.copy(x_v_, xp_, move), v.copy(g_v_, gp_, move), v.copy(ps_, pp_, move);
    v.add(rho_, rho_b_, rho_f_, 1, joined);
    const Check checks[3] = {{p_bb_, p_ff_, rho_, nullptr},
                             {p_bb_, p_fb_, rho_b_, p_fb_},
                             {p_bf_, p_ff_, rho_f_, p_bf_}};
    const std::vector<int> persist = criteria(checks, 3, joined);
    for (long c = 0; c < C; ++c)
      if (joined[c] && !persist[c]) done[c] = 1;
  }

  const std::vector<double> k = kinetic_energies(ps_, all);
  for (long c = 0; c < C; ++c) {
    stats_.accept_stat[c] = n_leap[c] > 0 ? sum_metro[c] / n_leap[c] : 0;
    stats_.n_leapfrog[c] = n_leap[c];
    stats_.tree_depth[c] = depth[c];
    stats_.divergent[c] = divergent[c];
    stats_.energy[c] = -lp_[c] + k[c];
    if (divergent[c]) ++bad_[c];
    if (moved[c]) ++accepted_[c];
  }
  state_to_host();
}

}  // namespace lockstep
