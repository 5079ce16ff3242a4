// NUTS with lockstep chains (sampler/nuts.hpp).
#include "lockstep/sampler/nuts.hpp"

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

double log_add_exp(double a, double b) {
  if (a == -HUGE_VAL) return b;
  if (b == -HUGE_VAL) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

void copy_row(const std::vector<double>& from, std::vector<double>& to, long c, long D) {
  std::copy(from.begin() + c * D, from.begin() + (c + 1) * D, to.begin() + c * D);
}

}  // namespace

Nuts::Nuts(Target& target, NutsSettings settings, const std::vector<double>& init, uint32_t key0,
           uint32_t key1)
    : LeapfrogSampler(target, settings.epsilon, settings.diag_sd, settings.adapt_delta, init,
                      key0, key1, "nuts", settings.per_chain_metric),
      settings_(checked(settings)) {
  const long n = C_ * D_;
  for (auto* v : {&xf_, &pf_, &gf_, &xb_, &pb_, &gb_, &xw_, &pw_, &gw_, &xp_, &gp_, &pp_, &ps_,
                  &p_ff_, &p_fb_, &p_bf_, &p_bb_, &rho_, &rho_f_, &rho_b_, &sub_first_, &sub_rho_,
                  &right_rho_, &both_rho_})
    v->assign(n, 0.0);
  for (auto* v : {&lpf_, &lpb_, &lpw_, &lpp_}) v->assign(C_, 0.0);
}

bool Nuts::criterion(long c, const double* p_minus, const double* p_plus,
                     const double* rho) const {
  const double* m = inverse_mass(c);
  double a = 0, b = 0;
  for (long i = 0; i < D_; ++i) {
    a += m[i] * p_minus[i] * rho[i];
    b += m[i] * p_plus[i] * rho[i];
  }
  return a > 0 && b > 0;
}

// The criterion for rho + extra (Stan's checks across two merged subtrees:
// one subtree's rho extended by the nearest point of the other).
bool Nuts::criterion_plus(long c, const double* p_minus, const double* p_plus, const double* rho,
                          const double* extra) const {
  const double* m = inverse_mass(c);
  double a = 0, b = 0;
  for (long i = 0; i < D_; ++i) {
    const double r = rho[i] + extra[i];
    a += m[i] * p_minus[i] * r;
    b += m[i] * p_plus[i] * r;
  }
  return a > 0 && b > 0;
}

void Nuts::ensure_levels(int depth) {
  while (static_cast<int>(levels_.size()) < depth) {
    Level l;
    for (auto* v : {&l.begin, &l.prefix, &l.left_end, &l.left_rho}) v->assign(C_ * D_, 0.0);
    levels_.push_back(std::move(l));
  }
}

void Nuts::transition() {
  const long C = C_, D = D_;
  auto row = [D](std::vector<double>& v, long c) { return v.data() + c * D; };

  draw_momentum(ps_);  // the momentum of the draw, starting at the current point
  xf_ = x_, xb_ = x_, gf_ = grad_, gb_ = grad_, pf_ = ps_, pb_ = ps_, lpf_ = lp_, lpb_ = lp_;
  p_ff_ = ps_, p_fb_ = ps_, p_bf_ = ps_, p_bb_ = ps_, rho_ = ps_;

  std::vector<double> H0(C), lsw(C, 0.0), lsw_sub(C, -HUGE_VAL), sum_metro(C, 0.0);
  std::vector<int> depth(C, 0), done(C, 0), building(C, 0), valid(C, 0), dir(C, 1);
  std::vector<int> n_leap(C, 0), divergent(C, 0), moved(C, 0);
  for (long c = 0; c < C; ++c) H0[c] = -lp_[c] + kinetic(c, row(ps_, c));

  for (int d = 0; d < settings_.max_treedepth; ++d) {
    if (std::all_of(done.begin(), done.end(), [](int x) { return x != 0; })) break;
    ensure_levels(d);
    for_chains([&](long c) {
      building[c] = !done[c];
      if (done[c]) return;
      valid[c] = 1;
      lsw_sub[c] = -HUGE_VAL;
      Stream& s = chain_streams_[c];
      s.purpose = purpose_direction;
      dir[c] = s.uniform() > 0.5 ? 1 : -1;
      const bool fwd = dir[c] > 0;
      copy_row(fwd ? xf_ : xb_, xw_, c, D);
      copy_row(fwd ? pf_ : pb_, pw_, c, D);
      copy_row(fwd ? gf_ : gb_, gw_, c, D);
      lpw_[c] = fwd ? lpf_[c] : lpb_[c];
      std::fill(row(sub_rho_, c), row(sub_rho_, c) + D, 0.0);
    });

    const long leaves = 1L << d;
    for (long k = 0; k < leaves; ++k) {
      if (std::none_of(building.begin(), building.end(), [](int x) { return x != 0; })) break;
      // Leapfrog: half kick and drift for every chain still building; the
      // others wait, their moving point unchanged.
      for_chains([&](long c) {
        if (!building[c]) return;
        const double eps = dir[c] * epsilon_;
        double *x = row(xw_, c), *p = row(pw_, c);
        const double* g = row(gw_, c);
        const double* m = inverse_mass(c);
        for (long i = 0; i < D; ++i) {
          p[i] += 0.5 * eps * g[i];
          x[i] += eps * m[i] * p[i];
        }
      });
      target_.log_density(xw_.data(), lpw_.data(), gw_.data());
      for_chains([&](long c) {
        if (!building[c]) return;
        const double eps = dir[c] * epsilon_;
        double* p = row(pw_, c);
        const double* g = row(gw_, c);
        for (long i = 0; i < D; ++i) p[i] += 0.5 * eps * g[i];
        ++n_leap[c];
        double H = -lpw_[c] + kinetic(c, p);
        if (std::isnan(H)) H = HUGE_VAL;
        if (H - H0[c] > divergence_threshold) divergent[c] = 1;
        const double w = H0[c] - H;  // the leaf's log weight
        sum_metro[c] += w > 0 ? 1 : std::exp(w);
        lsw_sub[c] = log_add_exp(lsw_sub[c], w);
        // streaming multinomial draw within the subtree
        Stream& s = chain_streams_[c];
        s.purpose = purpose_accept;
        if (w > -HUGE_VAL && s.uniform() < std::exp(w - lsw_sub[c])) {
          copy_row(xw_, xp_, c, D);
          copy_row(gw_, gp_, c, D);
          copy_row(pw_, pp_, c, D);
          lpp_[c] = lpw_[c];
        }
        double* S = row(sub_rho_, c);
        for (long i = 0; i < D; ++i) S[i] += p[i];
        if (k == 0) copy_row(pw_, sub_first_, c, D);
        if (divergent[c]) {
          valid[c] = 0;
          building[c] = 0;
          return;
        }
        // Blocks of 2^j leaves starting at this leaf.
        for (int j = 0; j < d && k % (1L << j) == 0; ++j) {
          Level& l = levels_[j];
          std::copy(p, p + D, row(l.begin, c));
          double* pre = row(l.prefix, c);
          for (long i = 0; i < D; ++i) pre[i] = S[i] - p[i];
        }
        // Blocks of 2^j leaves completed by this leaf: a left sibling is
        // stored; a right one is merged with its left sibling and checked.
        for (int j = 0; j < d && (k + 1) % (1L << j) == 0; ++j) {
          Level& l = levels_[j];
          const double* pre = row(l.prefix, c);
          if (((k >> j) & 1) == 0) {
            std::copy(p, p + D, row(l.left_end, c));
            double* lr = row(l.left_rho, c);
            for (long i = 0; i < D; ++i) lr[i] = S[i] - pre[i];
            break;
          }
          const double* left_begin = j + 1 < d ? row(levels_[j + 1].begin, c) : row(sub_first_, c);
          const double* left_end = row(l.left_end, c);
          const double* left_rho = row(l.left_rho, c);
          const double* right_begin = row(l.begin, c);
          double *right_rho = row(right_rho_, c), *both = row(both_rho_, c);
          for (long i = 0; i < D; ++i) {
            right_rho[i] = S[i] - pre[i];
            both[i] = left_rho[i] + right_rho[i];
          }
          const bool ok = criterion(c, left_begin, p, both) &&
                          criterion_plus(c, left_begin, right_begin, left_rho, right_begin) &&
                          criterion_plus(c, left_end, p, right_rho, left_end);
          if (!ok) {
            valid[c] = 0;
            building[c] = 0;
            return;
          }
        }
      });
    }

    // Join each chain's new subtree to its trajectory.
    for_chains([&](long c) {
      if (done[c]) return;
      if (!valid[c]) {  // a U-turn or divergence inside the subtree: it is discarded
        done[c] = 1;
        return;
      }
      const bool fwd = dir[c] > 0;
      copy_row(xw_, fwd ? xf_ : xb_, c, D);
      copy_row(pw_, fwd ? pf_ : pb_, c, D);
      copy_row(gw_, fwd ? gf_ : gb_, c, D);
      (fwd ? lpf_ : lpb_)[c] = lpw_[c];
      if (fwd) {
        copy_row(p_ff_, p_bf_, c, D);  // the old trajectory is the backward part
        copy_row(rho_, rho_b_, c, D);
        copy_row(sub_first_, p_fb_, c, D);
        copy_row(pw_, p_ff_, c, D);
        copy_row(sub_rho_, rho_f_, c, D);
      } else {
        copy_row(p_bb_, p_fb_, c, D);  // the old trajectory is the forward part
        copy_row(rho_, rho_f_, c, D);
        copy_row(sub_first_, p_bf_, c, D);
        copy_row(pw_, p_bb_, c, D);
        copy_row(sub_rho_, rho_b_, c, D);
      }
      ++depth[c];
      // Biased progressive sampling: favour the new subtree.
      Stream& s = chain_streams_[c];
      s.purpose = purpose_accept;
      if (lsw_sub[c] > lsw[c] || s.uniform() < std::exp(lsw_sub[c] - lsw[c])) {
        copy_row(xp_, x_, c, D);
        copy_row(gp_, grad_, c, D);
        copy_row(pp_, ps_, c, D);
        lp_[c] = lpp_[c];
        moved[c] = 1;
      }
      lsw[c] = log_add_exp(lsw[c], lsw_sub[c]);
      double* r = row(rho_, c);
      const double *rb = row(rho_b_, c), *rf = row(rho_f_, c);
      for (long i = 0; i < D; ++i) r[i] = rb[i] + rf[i];
      const bool persist = criterion(c, row(p_bb_, c), row(p_ff_, c), r) &&
                           criterion_plus(c, row(p_bb_, c), row(p_fb_, c), rb, row(p_fb_, c)) &&
                           criterion_plus(c, row(p_bf_, c), row(p_ff_, c), rf, row(p_bf_, c));
      if (!persist) done[c] = 1;
    });
  }

  for (long c = 0; c < C; ++c) {
    stats_.accept_stat[c] = n_leap[c] > 0 ? sum_metro[c] / n_leap[c] : 0;
    stats_.n_leapfrog[c] = n_leap[c];
    stats_.tree_depth[c] = depth[c];
    stats_.divergent[c] = divergent[c];
    stats_.energy[c] = -lp_[c] + kinetic(c, row(ps_, c));
    if (divergent[c]) ++bad_[c];
    if (moved[c]) ++accepted_[c];
  }
}

}  // namespace lockstep
