// Optimisers for opt() (optimiser.hpp).
#include "lockstep/optimiser.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <iterator>
#include <memory>
#include <stdexcept>

#include "lockstep/first_order.hpp"
#include "lockstep/sampler/chain_vectors.hpp"

namespace lockstep {

namespace {

// -log density and its gradient at x for every chain.
struct Objective {
  Target& target;
  long C, D;
  std::vector<double> lp, grad;
  void operator()(const std::vector<double>& x, std::vector<double>& f, std::vector<double>& g) {
    lp.resize(C);
    grad.resize(C * D);
    target.log_density(x.data(), lp.data(), grad.data());
    f.resize(C);
    g.resize(C * D);
    for (long c = 0; c < C; ++c) f[c] = -lp[c];
    for (long k = 0; k < C * D; ++k) g[k] = -grad[k];
  }
};

bool finite_row(const std::vector<double>& v, long c, long D) {
  for (long i = 0; i < D; ++i)
    if (!std::isfinite(v[c * D + i])) return false;
  return true;
}

// Per chain, whether f and its gradient g are finite: on every part of the
// state where the target holds part of it (owned_shard.hpp; collective), so
// that every rank decides alike.
std::vector<int> finite_everywhere(Target& target, const std::vector<double>& f,
                                   const std::vector<double>& g, long C, long D) {
  std::vector<double> bad(C);
  for (long c = 0; c < C; ++c) bad[c] = std::isfinite(f[c]) && finite_row(g, c, D) ? 0 : 1;
  target.sum_over_parts(bad.data(), C);
  std::vector<int> ok(C);
  for (long c = 0; c < C; ++c) ok[c] = bad[c] == 0;
  return ok;
}

// The first-order methods' iterations, every start in lockstep, over starts
// kept by `rows` (HostRows, VectorRows): rows.evaluate(at_new, f) puts -log
// density at x (or x_new) into f, its gradient into g (or g_new), and says
// per start whether both are finite; rows.step(rule, t, c) moves start c's
// x_new from its x_new and g; rows.settle(moved, failed) (per start: 1 or
// 0) sets x = x_new and g = g_new on the starts that moved, and x_new = x on
// those that failed (their last finite point); rows.par() is x.
template <class Rows>
OptimiserResult first_order_loop(Rows& rows, FirstOrder& rule, long C, const OptimiserSettings& s,
                                 bool (*interrupted)()) {
  std::vector<double> f, f_new;
  const std::vector<int> finite_start = rows.evaluate(false, f);
  OptimiserResult r;
  r.iterations.assign(C, 0);
  r.convergence.assign(C, 1);
  std::vector<int> active(C, 1);
  for (long c = 0; c < C; ++c)
    if (!finite_start[c]) active[c] = 0, r.convergence[c] = 2;
  for (long t = 1; t <= s.max_iterations; ++t) {
    if (std::none_of(active.begin(), active.end(), [](int on) { return on != 0; })) break;
    if (interrupted && interrupted()) break;
    for (long c = 0; c < C; ++c)
      if (active[c]) rows.step(rule, t, c);
    const std::vector<int> finite = rows.evaluate(true, f_new);
    std::vector<int> moved(C, 0), failed(C, 0);
    for (long c = 0; c < C; ++c) {
      if (!active[c]) continue;
      ++r.iterations[c];
      if (!finite[c]) {
        failed[c] = 1;
        active[c] = 0;
        r.convergence[c] = 2;
        continue;
      }
      moved[c] = 1;
      const bool done = std::fabs(f_new[c] - f[c]) < s.tolerance;
      f[c] = f_new[c];
      if (done) active[c] = 0, r.convergence[c] = 0;
    }
    rows.settle(moved, failed);
  }
  r.par = rows.par();
  r.value = f;
  return r;
}

// Starts in host memory, evaluated by the target (Objective): g is the
// objective's gradient. Where the target holds part of the state, whether
// a start is finite is agreed over the parts (finite_everywhere).
struct HostRows {
  Objective& obj;
  long C, D;
  std::vector<double> x, x_new, g, g_new;
  std::vector<int> evaluate(bool at_new, std::vector<double>& f) {
    std::vector<double>& grad = at_new ? g_new : g;
    obj(at_new ? x_new : x, f, grad);
    return finite_everywhere(obj.target, f, grad, C, D);
  }
  void step(FirstOrder& rule, long t, long c) {
    rule.step(x_new.data() + c * D, g.data() + c * D, c, D, t);
  }
  void settle(const std::vector<int>& moved, const std::vector<int>& failed) {
    for (long c = 0; c < C; ++c) {
      const long from = c * D, to = (c + 1) * D;
      if (failed[c]) std::copy(x.begin() + from, x.begin() + to, x_new.begin() + from);
      if (!moved[c]) continue;
      std::copy(x_new.begin() + from, x_new.begin() + to, x.begin() + from);
      std::copy(g_new.begin() + from, g_new.begin() + to, g.begin() + from);
    }
  }
  std::vector<double> par() const { return x; }
};

// Starts on the target's vectors (OptimiserSettings::resident: a GPU's
// memory): x, its gradients and the rule's state a, b, u stay there, and an
// iteration moves C values each way, the log densities and whether each
// gradient is finite (0 x g x g summed over a row: NaN where an entry is
// not). g is the log density's gradient, so the rule's steps take it with
// g_sign -1.
struct VectorRows {
  ChainVectors& v;
  long C, D;
  double *x, *x_new, *g, *g_new, *zeros, *a, *b, *u;
  std::vector<double> lp, zero_dot;
  VectorRows(ChainVectors& vectors, const FirstOrder& rule, const std::vector<double>& init,
             long chains, long dim)
      : v(vectors), C(chains), D(dim), lp(chains), zero_dot(chains) {
    for (double** p : {&x, &x_new, &g, &g_new, &zeros, &a, &b, &u}) *p = v.make();
    v.upload(x, init.data());
    v.upload(x_new, init.data());
    // (the rule's host rows give its state's first values)
    v.upload(a, rule.a.data());
    v.upload(b, rule.b.data());
    v.upload(u, rule.u.data());
  }
  std::vector<int> evaluate(bool at_new, std::vector<double>& f) {
    double* grad = at_new ? g_new : g;
    v.log_density(at_new ? x_new : x, lp.data(), grad);
    const DotSpec spec{grad, grad, nullptr, DotKind::product};
    v.dots(&spec, 1, zeros, ChainMask::all(C), zero_dot.data());
    f.resize(C);
    std::vector<int> ok(C);
    for (long c = 0; c < C; ++c) {
      f[c] = -lp[c];
      ok[c] = std::isfinite(f[c]) && zero_dot[c] == 0;
    }
    return ok;
  }
  void step(FirstOrder& rule, long t, long c) {
    FirstOrderStep body =
        rule.body(t, c, x_new + c * D, a + c * D, b + c * D, u + c * D, g + c * D, D);
    body.g_sign = -1;
    v.first_order_step(body);
  }
  void settle(const std::vector<int>& moved, const std::vector<int>& failed) {
    const ChainMask back = ChainMask::where(failed), take = ChainMask::where(moved);
    if (back.any()) v.copy(x_new, x, back);
    if (!take.any()) return;
    v.copy(x, x_new, take);
    v.copy(g, g_new, take);
  }
  std::vector<double> par() {
    std::vector<double> out(C * D);
    v.download(out.data(), x);
    return out;
  }
};

// L-BFGS with a backtracking (Armijo) line search, every start in lockstep:
// each round evaluates one trial point per start still running. On a target
// that holds part of the state (a rank that owns its groups,
// owned_shard.hpp), every dot product and sup norm is made whole over the
// parts (collective, the replicated coordinates counted once), and so is
// every finite check: every rank takes the same steps, which are one
// process's up to the order of sums.
OptimiserResult lbfgs(Objective& obj, const OptimiserSettings& s, std::vector<double> x,
                      bool (*interrupted)()) {
  const long C = obj.C, D = obj.D;
  const long memory = 10;
  const double gtol = optimiser_param(s, "tolerance", 1e-8);
  const long max_ls = static_cast<long>(optimiser_param(s, "max_line_search_iterations", 50));
  // TensorFlow Probability's (greta's) further stopping rules, off at 0: the
  // largest change of a coordinate, and the change of the objective relative
  // to it and absolute, at most these
  const double xtol = optimiser_param(s, "x_tolerance", 0);
  const double ftol_rel = optimiser_param(s, "f_relative_tolerance", 0);
  const double ftol_abs = optimiser_param(s, "f_absolute_tolerance", 0);
  std::vector<double> f, g, ft, gt;
  obj(x, f, g);
  OptimiserResult r;
  r.iterations.assign(C, 0);
  r.convergence.assign(C, 1);
  std::vector<int> active(C, 1);
  std::vector<std::deque<std::vector<double>>> S(C), Y(C);
  std::vector<double> dir(C * D), trial(x), step(C, 1.0), slope(C, 0.0);
  std::vector<long> ls_tries(C, 0);

  Target& parts = obj.target;
  const long from = parts.counted_from();
  auto sup_norm = [&](const std::vector<double>& v, long c) {
    double m = 0;
    for (long i = 0; i < D; ++i) m = std::max(m, std::fabs(v[c * D + i]));
    parts.max_over_parts(&m, 1);
    return m;
  };
  // a . b over the whole state, for rows of D values
  auto dot = [&](const double* a, const double* b) {
    double sum = 0;
    for (long i = from; i < D; ++i) sum += a[i] * b[i];
    parts.sum_over_parts(&sum, 1);
    return sum;
  };
  // Two-loop recursion: dir = -H g, then a first trial step.
  auto new_direction = [&](long c) {
    std::vector<double> q(g.begin() + c * D, g.begin() + (c + 1) * D);
    const long k = static_cast<long>(S[c].size());
    std::vector<double> alpha(k), rhos(k);
    for (long j = k - 1; j >= 0; --j) {
      rhos[j] = 1 / dot(S[c][j].data(), Y[c][j].data());
      alpha[j] = rhos[j] * dot(S[c][j].data(), q.data());
      for (long i = 0; i < D; ++i) q[i] -= alpha[j] * Y[c][j][i];
    }
    double gamma = 1;
    if (k > 0)
      gamma = dot(S[c][k - 1].data(), Y[c][k - 1].data()) / dot(Y[c][k - 1].data(), Y[c][k - 1].data());
    for (long i = 0; i < D; ++i) q[i] *= gamma;
    for (long j = 0; j < k; ++j) {
      const double beta = rhos[j] * dot(Y[c][j].data(), q.data());
      for (long i = 0; i < D; ++i) q[i] += S[c][j][i] * (alpha[j] - beta);
    }
    for (long i = 0; i < D; ++i) dir[c * D + i] = -q[i];
    double sl = dot(g.data() + c * D, dir.data() + c * D);
    if (!(sl < 0)) {  // not a descent direction: steepest descent, forget the pairs
      S[c].clear();
      Y[c].clear();
      for (long i = 0; i < D; ++i) dir[c * D + i] = -g[c * D + i];
      sl = -dot(g.data() + c * D, g.data() + c * D);
    }
    slope[c] = sl;
    // the first step of a start without curvature pairs is scaled so that no
    // coordinate moves by more than 1
    step[c] = k > 0 ? 1.0 : std::min(1.0, 1.0 / std::max(sup_norm(g, c), 1e-300));
    ls_tries[c] = 0;
    for (long i = 0; i < D; ++i) trial[c * D + i] = x[c * D + i] + step[c] * dir[c * D + i];
  };

  const std::vector<int> finite_start = finite_everywhere(parts, f, g, C, D);
  for (long c = 0; c < C; ++c) {
    if (!finite_start[c]) {
      active[c] = 0;
      r.convergence[c] = 2;
    } else if (sup_norm(g, c) < gtol) {
      active[c] = 0;
      r.convergence[c] = 0;
    } else {
      new_direction(c);
    }
  }
  const long max_rounds = s.max_iterations * (max_ls + 1) + 1;
  for (long round = 0; round < max_rounds; ++round) {
    if (std::none_of(active.begin(), active.end(), [](int v) { return v != 0; })) break;
    if (interrupted && interrupted()) break;
    obj(trial, ft, gt);
    const std::vector<int> finite = finite_everywhere(parts, ft, gt, C, D);
    for (long c = 0; c < C; ++c) {
      if (!active[c]) continue;
      const bool ok = finite[c] && ft[c] <= f[c] + 1e-4 * step[c] * slope[c];
      if (!ok) {
        if (++ls_tries[c] >= max_ls) {  // no acceptable step: as good as it gets here
          active[c] = 0;
          r.convergence[c] = 0;
          continue;
        }
        step[c] *= 0.5;
        for (long i = 0; i < D; ++i) trial[c * D + i] = x[c * D + i] + step[c] * dir[c * D + i];
        continue;
      }
      std::vector<double> sv(D), yv(D);
      double moved = 0;
      for (long i = 0; i < D; ++i) {
        sv[i] = trial[c * D + i] - x[c * D + i];
        yv[i] = gt[c * D + i] - g[c * D + i];
        moved = std::max(moved, std::fabs(sv[i]));
      }
      const double sy = dot(sv.data(), yv.data());
      parts.max_over_parts(&moved, 1);
      if (sy > 1e-12) {
        S[c].push_back(std::move(sv));
        Y[c].push_back(std::move(yv));
        if (static_cast<long>(S[c].size()) > memory) S[c].pop_front(), Y[c].pop_front();
      }
      const double change = std::fabs(ft[c] - f[c]);
      const bool small_change = (xtol > 0 && moved <= xtol) ||
                                (ftol_rel > 0 && change <= ftol_rel * std::fabs(f[c])) ||
                                (ftol_abs > 0 && change <= ftol_abs);
      std::copy(trial.begin() + c * D, trial.begin() + (c + 1) * D, x.begin() + c * D);
      std::copy(gt.begin() + c * D, gt.begin() + (c + 1) * D, g.begin() + c * D);
      f[c] = ft[c];
      ++r.iterations[c];
      if (change < s.tolerance || sup_norm(g, c) < gtol || small_change) {
        active[c] = 0;
        r.convergence[c] = 0;
      } else if (r.iterations[c] >= s.max_iterations) {
        active[c] = 0;
      } else {
        new_direction(c);
      }
    }
  }
  r.par = x;
  r.value = f;
  return r;
}

// Nelder-Mead (TensorFlow Probability's nelder_mead_minimize, greta's
// nelder_mead()): a simplex of D + 1 vertices per start, the first the start
// itself, vertex i + 1 the start moved by step_sizes along coordinate i. An
// iteration reflects the worst vertex through the centroid of the others,
// then expands, accepts, contracts (outside or inside) or shrinks every
// vertex towards the best. Every start runs in lockstep with the others, one
// trial point each per engine call (a start that has converged, or is between
// phases, evaluates its best vertex again), so a start's iteration takes one to
// D + 2 calls. Converged: the simplex's values span at most func_tolerance,
// or its vertices lie within position_tolerance of the best in every
// coordinate. Objective values that are not finite count as +Inf.
OptimiserResult nelder_mead(Target& target, const OptimiserSettings& s, std::vector<double> x,
                            bool (*interrupted)()) {
  const long C = target.chains(), D = target.dim(), V = D + 1;
  const double step = optimiser_param(s, "step_sizes", 1), ftol = optimiser_param(s, "func_tolerance", 1e-8);
  const double xtol = optimiser_param(s, "position_tolerance", 1e-8);
  const double reflection = optimiser_param(s, "reflection", 1), expansion = optimiser_param(s, "expansion", 2);
  const double contraction = optimiser_param(s, "contraction", 0.5), shrinkage = optimiser_param(s, "shrinkage", 0.5);
  enum Phase { start, reflect, expand, contract_outside, contract_inside, shrink, done };
  std::vector<double> verts(C * V * D), vals(C * V, HUGE_VAL), trial(x), lp(C);
  std::vector<double> centroid(C * D), reflected(C * D), f_reflected(C, 0);
  std::vector<int> phase(C, start), worst(C, 0), best(C, 0);
  std::vector<long> next(C, 0);  // start: the vertex being evaluated; shrink: the vertex moved
  OptimiserResult r;
  r.iterations.assign(C, 0);
  r.convergence.assign(C, 1);
  if (D == 0) throw std::invalid_argument("opt: nelder_mead needs at least one free parameter");
  auto vertex = [&](long c, long v) { return verts.data() + (c * V + v) * D; };
  auto set_trial = [&](long c, const double* p) {
    std::copy(p, p + D, trial.begin() + c * D);
  };
  for (long c = 0; c < C; ++c) {
    for (long v = 0; v < V; ++v) {
      double* p = vertex(c, v);
      std::copy(x.begin() + c * D, x.begin() + (c + 1) * D, p);
      if (v > 0) p[v - 1] += step;
    }
    set_trial(c, vertex(c, 0));
  }
  // The next iteration of start c: order its vertices, check convergence,
  // and reflect (the trial point), or finish.
  auto begin_iteration = [&](long c) {
    const double* f = vals.data() + c * V;
    long b = 0, w = 0;
    for (long v = 1; v < V; ++v) {
      if (f[v] < f[b]) b = v;
      if (f[v] > f[w] || (f[v] == f[w] && w == b)) w = v;
    }
    if (w == b) w = b == 0 ? 1 : 0;
    best[c] = static_cast<int>(b);
    worst[c] = static_cast<int>(w);
    double spread = 0;
    for (long v = 0; v < V; ++v)
      for (long i = 0; i < D; ++i)
        spread = std::max(spread, std::fabs(vertex(c, v)[i] - vertex(c, b)[i]));
    const bool finite = std::isfinite(f[b]);
    if (finite && (f[w] - f[b] <= ftol || spread <= xtol)) {
      phase[c] = done;
      r.convergence[c] = 0;
    } else if (r.iterations[c] >= s.max_iterations) {
      phase[c] = done;
    }
    if (phase[c] == done) {
      set_trial(c, vertex(c, b));
      return;
    }
    double* cen = centroid.data() + c * D;
    std::fill(cen, cen + D, 0.0);
    for (long v = 0; v < V; ++v)
      if (v != w)
        for (long i = 0; i < D; ++i) cen[i] += vertex(c, v)[i] / D;
    const double* pw = vertex(c, w);
    double* xr = reflected.data() + c * D;
    for (long i = 0; i < D; ++i) xr[i] = cen[i] + reflection * (cen[i] - pw[i]);
    set_trial(c, xr);
    phase[c] = reflect;
  };
  auto accept = [&](long c, const double* p, double f) {
    std::copy(p, p + D, vertex(c, worst[c]));
    vals[c * V + worst[c]] = f;
    ++r.iterations[c];
    begin_iteration(c);
  };
  auto shrink_next = [&](long c) {  // the next vertex but the best to move, or the next iteration
    while (next[c] < V && next[c] == best[c]) ++next[c];
    if (next[c] >= V) {
      ++r.iterations[c];
      begin_iteration(c);
      return;
    }
    double* p = vertex(c, next[c]);
    const double* pb = vertex(c, best[c]);
    for (long i = 0; i < D; ++i) p[i] = pb[i] + shrinkage * (p[i] - pb[i]);
    set_trial(c, p);
    phase[c] = shrink;
  };
  const long max_rounds = (s.max_iterations + 1) * (D + 2) + V;
  for (long round = 0; round < max_rounds; ++round) {
    if (std::all_of(phase.begin(), phase.end(), [](int p) { return p == done; })) break;
    if (interrupted && interrupted()) break;
    target.log_density(trial.data(), lp.data(), nullptr);
    for (long c = 0; c < C; ++c) {
      const double f = std::isfinite(lp[c]) ? -lp[c] : HUGE_VAL;
      const double* t = trial.data() + c * D;
      const double* fv = vals.data() + c * V;
      switch (phase[c]) {
        case start:
          vals[c * V + next[c]] = f;
          if (++next[c] < V) set_trial(c, vertex(c, next[c]));
          else begin_iteration(c);
          break;
        case reflect: {
          f_reflected[c] = f;
          double second = -HUGE_VAL;  // the second-worst value
          for (long v = 0; v < V; ++v)
            if (v != worst[c]) second = std::max(second, fv[v]);
          const double* cen = centroid.data() + c * D;
          double* trial_c = trial.data() + c * D;
          if (f < fv[best[c]]) {
            for (long i = 0; i < D; ++i)
              trial_c[i] = cen[i] + expansion * (reflected[c * D + i] - cen[i]);
            phase[c] = expand;
          } else if (f < second) {
            accept(c, reflected.data() + c * D, f);
          } else if (f < fv[worst[c]]) {
            for (long i = 0; i < D; ++i)
              trial_c[i] = cen[i] + contraction * (reflected[c * D + i] - cen[i]);
            phase[c] = contract_outside;
          } else {
            const double* pw = vertex(c, worst[c]);
            for (long i = 0; i < D; ++i) trial_c[i] = cen[i] + contraction * (pw[i] - cen[i]);
            phase[c] = contract_inside;
          }
          break;
        }
        case expand:  // (accept() copies t into the simplex before the next trial overwrites it)
          if (f < f_reflected[c]) {
            accept(c, t, f);
          } else {
            accept(c, reflected.data() + c * D, f_reflected[c]);
          }
          break;
        case contract_outside:
        case contract_inside: {
          const bool ok = phase[c] == contract_outside ? f <= f_reflected[c] : f < fv[worst[c]];
          if (ok) {
            accept(c, t, f);
          } else {
            next[c] = 0;
            shrink_next(c);
          }
          break;
        }
        case shrink:
          vals[c * V + next[c]] = f;
          ++next[c];
          shrink_next(c);
          break;
        case done:
          break;
      }
    }
  }
  r.par.resize(C * D);
  r.value.resize(C);
  for (long c = 0; c < C; ++c) {
    long b = 0;
    for (long v = 1; v < V; ++v)
      if (vals[c * V + v] < vals[c * V + b]) b = v;
    std::copy(vertex(c, b), vertex(c, b) + D, r.par.begin() + c * D);
    r.value[c] = vals[c * V + b];
    if (!std::isfinite(r.value[c])) r.convergence[c] = 2;  // nowhere finite
  }
  return r;
}

}  // namespace

OptimiserResult optimise(Target& target, const OptimiserSettings& settings,
                         const std::vector<double>& init, bool (*interrupted)()) {
  const long C = target.chains(), D = target.dim();
  if (static_cast<long>(init.size()) != C * D)
    throw std::invalid_argument("opt: initial values must have starts x dim elements");
  if (settings.max_iterations < 1) throw std::invalid_argument("opt: max_iterations must be >= 1");
  if (!(settings.tolerance >= 0)) throw std::invalid_argument("opt: tolerance must be >= 0");
  static const char* known[] = {"bfgs", "nelder_mead", "gradient_descent", "adam", "adamax",
                                "nadam", "adagrad", "adadelta", "rms_prop", "ftrl",
                                "proximal_gradient_descent", "proximal_adagrad", "adagrad_da"};
  if (std::none_of(std::begin(known), std::end(known),
                   [&](const char* k) { return settings.method == k; }))
    throw std::invalid_argument("opt: unknown optimiser '" + settings.method + "'");
  Objective obj{target, C, D, {}, {}};
  if (settings.method == "bfgs") return lbfgs(obj, settings, init, interrupted);
  if (settings.method == "nelder_mead") return nelder_mead(target, settings, init, interrupted);
  FirstOrder rule(settings, C, D);
  // where the target's vectors can hold the method (a GPU's: by default)
  const bool may_reside = settings.resident >= 0 && !target.full_index() &&
                          target.counted_from() == 0 && C <= max_mask_chains;
  if (may_reside) {
    std::unique_ptr<ChainVectors> vectors = target.vectors();
    if (vectors->holds_optimiser() && (settings.resident == 1 || vectors->on_device())) {
      VectorRows rows(*vectors, rule, init, C, D);
      return first_order_loop(rows, rule, C, settings, interrupted);
    }
  }
  HostRows rows{obj, C, D, init, init, {}, {}};
  return first_order_loop(rows, rule, C, settings, interrupted);
}

}  // namespace lockstep
