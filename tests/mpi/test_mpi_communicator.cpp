// Tests of lockstep::MpiCommunicator (inst/include/lockstep/mpi_communicator.hpp),
// run under `mpirun -np 2` (tools/check.sh, suite "mpi"); plain C++ with main().
//
// Every check is collective: each rank evaluates it and the check passes only
// when it passed on every rank, so all ranks count the same checks. Rank 0
// prints one line per check and, last, `mpi-counts: PASSED FAILED`, which
// check.sh reads; the exit status is non-zero when anything failed.
//
// 1. all_reduce_sum directly: double and float buffers with known exact sums,
//    both orders (MPI_Allreduce and rank order), counts split into chunks, n = 0,
//    a one-rank communicator; rank order equal bitwise to InProcessCommunicator
//    summing every rank's buffer; results bitwise identical on every rank.
// 2. SPMD evaluation: every rank builds the same hierarchical model (same
//    parameters and free state) over its own slice of the N observation rows,
//    evaluates lp and gradient with Executor<double> and all-reduces them; the
//    result must equal a single-process evaluation over all N rows to 1e-12
//    relative, be bitwise the same on every rank, and (so that the test can
//    fail) differ from the rank's own partial. Global contributions are counted
//    once: priors only on rank 0, and the other ranks subtract the log
//    Jacobians of the constrained parameters, which the executor adds on
//    every rank (a program of the parameters alone gives them).
// 3. Owned shards (owned_shard.hpp): each rank holds its groups' rows of the
//    seed model and only their local parameters; NUTS over the ranks' slices
//    (warmup and sampling) makes one process's draws to 1e-8, and a gradient
//    all-reduces the log density and the globals' gradient alone.
#include <mpi.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "helpers.hpp"  // tests/cpp: node builders and close()
#include "lockstep/communicator.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/mpi_communicator.hpp"
#include "lockstep/group_slice.hpp"
#include "lockstep/optimiser.hpp"
#include "lockstep/owned_shard.hpp"
#include "lockstep/ownership.hpp"
#include "lockstep/planner.hpp"
#include "lockstep/sampler/dense_metric.hpp"
#include "lockstep/sampler/nuts.hpp"
#include "lockstep/sampler/rwmh.hpp"
#include "lockstep/sampler/slice.hpp"
#include "lockstep/shards.hpp"
#include "lockstep/svi.hpp"
#include "models.hpp"  // tests/cpp: the seed model

using namespace lstest;
using lockstep::ExecOptions;
using lockstep::InProcessCommunicator;
using lockstep::MpiCommunicator;
using Order = lockstep::MpiCommunicator::Order;

namespace {

int world_rank = 0, world_size = 1;
int n_passed = 0, n_failed = 0;

// A collective check: passes when `ok` holds on every rank. A rank where it
// failed prints `detail`.
void expect(bool ok, const std::string& what, const std::string& detail = "") {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!ok) std::fprintf(stderr, "rank %d: FAILED %s %s\n", world_rank, what.c_str(), detail.c_str());
  if (all) {
    ++n_passed;
  } else {
    ++n_failed;
  }
  if (world_rank == 0) std::printf("%s %s\n", all ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
}

// Whether `v` is bitwise the same on every rank (rank 0's copy broadcast).
template <class T> bool same_on_all_ranks(const std::vector<T>& v) {
  std::vector<T> root = v;
  MPI_Bcast(root.data(), static_cast<int>(root.size() * sizeof(T)), MPI_BYTE, 0, MPI_COMM_WORLD);
  return std::memcmp(root.data(), v.data(), v.size() * sizeof(T)) == 0;
}

// The rows [first, second) of N that rank r of P holds; `share` is rank 0's
// fraction when P = 2 (uneven splits), P-way even otherwise.
std::pair<long, long> my_rows(long N, int r, int P, double share) {
  if (P == 2) {
    const long cut = static_cast<long>(N * share);
    return r == 0 ? std::make_pair(0L, cut) : std::make_pair(cut, N);
  }
  return {N * r / P, N * (r + 1) / P};
}

// ---------------------------------------------------------------- 1. all_reduce_sum

template <class T> const char* type_name() { return sizeof(T) == 8 ? "double" : "float"; }
const char* order_name(Order o) { return o == Order::rank ? "rank order" : "MPI_Allreduce"; }

// Buffers of small integers and halves: every partial sum is exact, in float too.
template <class T> T known(int r, long i) { return T((r + 1) * (i % 1000)) + T(0.5) * T(r); }

template <class T> void test_known_sums(Order order, long n, long max_count) {
  MpiCommunicator comm(MPI_COMM_WORLD, order, max_count);
  std::vector<T> buf(n);
  for (long i = 0; i < n; ++i) buf[i] = known<T>(world_rank, i);
  T* bufs[] = {buf.data()};
  comm.all_reduce_sum(bufs, n);
  long bad = 0, first_bad = -1;
  for (long i = 0; i < n; ++i) {
    T want = 0;
    for (int r = 0; r < world_size; ++r) want += known<T>(r, i);
    if (buf[i] != want && bad++ == 0) first_bad = i;
  }
  std::ostringstream what;
  what << "all_reduce_sum " << type_name<T>() << ", " << order_name(order) << ", n = " << n
       << ", chunks of " << max_count << ": exact known sums";
  std::ostringstream detail;
  if (bad) detail << "(" << bad << " wrong, first at " << first_bad << ": " << buf[first_bad] << ")";
  expect(bad == 0, what.str(), detail.str());
}

// Random values (each rank can generate every rank's buffer): rank order must
// equal InProcessCommunicator bitwise; MPI_Allreduce must agree to rounding;
// both bitwise the same on every rank.
template <class T> void test_random_sums(Order order, long n, long max_count) {
  auto buffer = [n](int r) {
    std::mt19937 rng(1000 + r);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<T> v(n);
    for (T& x : v) x = static_cast<T>(std::ldexp(u(rng), static_cast<int>(rng() % 20) - 10));
    return v;
  };
  std::vector<std::vector<T>> inputs;
  for (int r = 0; r < world_size; ++r) inputs.push_back(buffer(r));
  std::vector<std::vector<T>> all = inputs;
  std::vector<T*> ptrs;
  for (auto& v : all) ptrs.push_back(v.data());
  InProcessCommunicator local(world_size);
  local.all_reduce_sum(ptrs.data(), n);  // all[0]: the sum in rank order

  MpiCommunicator comm(MPI_COMM_WORLD, order, max_count);
  std::vector<T> mine = inputs[world_rank];
  T* bufs[] = {mine.data()};
  comm.all_reduce_sum(bufs, n);
  std::ostringstream what;
  what << "all_reduce_sum " << type_name<T>() << ", " << order_name(order) << ", n = " << n
       << ", chunks of " << max_count;
  if (order == Order::rank) {
    expect(std::memcmp(mine.data(), all[0].data(), n * sizeof(T)) == 0,
           what.str() + ": bitwise equal to InProcessCommunicator");
  } else {
    // |difference| <= P eps sum_r |x_r|: the bound of any summation order.
    long bad = 0;
    const double eps = sizeof(T) == 8 ? 0x1p-52 : 0x1p-23;
    for (long i = 0; i < n; ++i) {
      double magnitude = 0;
      for (int r = 0; r < world_size; ++r) magnitude += std::fabs(double(inputs[r][i]));
      if (!(std::fabs(double(mine[i]) - double(all[0][i])) <= world_size * eps * magnitude)) ++bad;
    }
    expect(bad == 0, what.str() + ": equal to the serial sum up to rounding",
           "(" + std::to_string(bad) + " differ)");
  }
  expect(same_on_all_ranks(mine), what.str() + ": bitwise the same on every rank");
}

void test_communicator_basics() {
  MpiCommunicator comm;
  expect(comm.ranks() == world_size && comm.rank() == world_rank,
         "ranks() and rank() are MPI_COMM_WORLD's size and rank");
  expect(world_size >= 2, "run with at least 2 ranks (mpirun -np 2)",
         "(size " + std::to_string(world_size) + ")");

  // n = 0: nothing sent, nothing changed, nothing left pending.
  for (Order o : {Order::allreduce, Order::rank}) {
    MpiCommunicator c(MPI_COMM_WORLD, o);
    double d = 7;
    float f = 7;
    double* dp[] = {&d};
    float* fp[] = {&f};
    c.all_reduce_sum(dp, 0);
    c.all_reduce_sum(fp, 0);
    expect(d == 7 && f == 7, std::string("n = 0 leaves the buffer alone (") + order_name(o) + ")");
  }

  // A one-rank communicator: the sum is the buffer itself.
  MpiCommunicator self(MPI_COMM_SELF);
  std::vector<double> v = {1.5, -2, 3};
  double* vp[] = {v.data()};
  self.all_reduce_sum(vp, 3);
  expect(self.ranks() == 1 && v == std::vector<double>{1.5, -2, 3},
         "MPI_COMM_SELF: one rank, all_reduce_sum is the identity");

  // stats(): calls and payload bytes, whatever the order and chunking
  for (Order o : {Order::allreduce, Order::rank}) {
    MpiCommunicator c(MPI_COMM_WORLD, o, 3);  // chunks of 3: a call is still one
    std::vector<double> d(10, 1.0);
    std::vector<float> f(4, 1.0f);
    double* dp[] = {d.data()};
    float* fp[] = {f.data()};
    c.all_reduce_sum(dp, 10);
    c.all_reduce_sum(fp, 4);
    char bytes[5] = {1, 2, 3, 4, 5};
    c.broadcast_bytes(bytes, 5);
    const lockstep::CommunicatorStats s = c.stats();
    expect(s.calls == 3 && s.bytes == 10 * 8 + 4 * 4 + 5,
           std::string("stats() counts 3 calls and 101 bytes (") + order_name(o) + ")",
           "(" + std::to_string(s.calls) + " calls, " + std::to_string(s.bytes) + " bytes)");
    c.reset_stats();
    expect(c.stats().calls == 0 && c.stats().bytes == 0,
           std::string("reset_stats() starts again (") + order_name(o) + ")");
  }

  bool threw = false;
  try {
    MpiCommunicator bad(MPI_COMM_WORLD, Order::allreduce, 0);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  expect(threw, "max_count = 0 is rejected");

  // The float sum of MPI_Allreduce is done in double: with three or more
  // ranks a float sum can differ; with any number it must equal the double
  // sum of the float values, rounded once.
  {
    MpiCommunicator c(MPI_COMM_WORLD, Order::allreduce);
    const long n = 257;
    auto value = [](int r, long i) { return static_cast<float>(1.0 + (r + 1) * i * 1e-7); };
    std::vector<float> f(n);
    for (long i = 0; i < n; ++i) f[i] = value(world_rank, i);
    float* fp[] = {f.data()};
    c.all_reduce_sum(fp, n);
    long bad = 0;
    for (long i = 0; i < n; ++i) {
      double want = 0;
      for (int r = 0; r < world_size; ++r) want += static_cast<double>(value(r, i));
      if (f[i] != static_cast<float>(want)) ++bad;
    }
    expect(bad == 0, "all_reduce_sum float, MPI_Allreduce: the double sum rounded to float",
           "(" + std::to_string(bad) + " differ)");
  }
}

// ---------------------------------------------------------------- 2. SPMD evaluation

struct Data {
  long N, K, G;
  std::vector<double> X;  // N x K, column-major
  std::vector<double> y, z;
  std::vector<long> group;
};

Data make_data(long N, long K, long G) {
  std::mt19937 rng(42);
  std::normal_distribution<double> norm;
  std::uniform_int_distribution<long> g(0, G - 1);
  Data d{N, K, G, std::vector<double>(N * K), std::vector<double>(N), std::vector<double>(N),
         std::vector<long>(N)};
  for (double& v : d.X) v = norm(rng);
  for (double& v : d.y) v = 0.5 + 1.3 * norm(rng);
  for (long i = 0; i < N; ++i) d.z[i] = (i * 7 + 3) % 5 < 2 ? 1 : 0;
  for (long& v : d.group) v = g(rng);
  return d;
}

// The free state: mu, tau (> 0), alpha[G], beta[K], sigma (> 0).
long n_free(const Data& d) { return 3 + d.G + d.K; }

// A hierarchical regression over rows [r0, r1):
//   mu ~ normal(0, 1); tau ~ normal(0, 1) T(0, ); alpha ~ normal(mu, tau)
//   beta ~ normal(0, 1); sigma ~ normal(0, 1) T(0, )
//   eta = X beta + alpha[group]; y ~ normal(eta, sigma); z ~ bernoulli(ilogit(eta))
// `priors`: include the global terms (one rank only). `likelihood`: include
// the rows' terms (without either: the parameters alone, i.e. their log
// Jacobians).
Program model(const Data& d, long r0, long r1, bool priors, bool likelihood = true) {
  Program p;
  long off = 0;
  const int mu = p.add(param_node(1, off++));
  const int tau = p.add(param_node(1, off++, Transform::lower, 0));
  const int alpha = p.add(param_node(d.G, off));
  off += d.G;
  const int beta = p.add(param_node(d.K, off));
  off += d.K;
  const int sigma = p.add(param_node(1, off++, Transform::lower, 0));
  p.n_free = off;
  if (priors) {
    const int zero = p.add(data_node({0}));
    const int one = p.add(data_node({1}));
    add_term(p, density_node(Family::normal, {mu, zero, one}));
    add_term(p, density_node(Family::normal, {tau, zero, one}, 0, inf));
    add_term(p, density_node(Family::normal, {alpha, mu, tau}));
    add_term(p, density_node(Family::normal, {beta, zero, one}));
    add_term(p, density_node(Family::normal, {sigma, zero, one}, 0, inf));
  }
  if (likelihood && r1 > r0) {
    const long n = r1 - r0;
    std::vector<double> X(n * d.K);
    for (long k = 0; k < d.K; ++k)
      for (long i = 0; i < n; ++i) X[k * n + i] = d.X[k * d.N + r0 + i];
    const int Xn = p.add(data_node(X, {n, d.K}));
    const int xb = p.add(matmul_node(Xn, beta, p));
    const int ga = p.add(gather_node(
        alpha, std::vector<long>(d.group.begin() + r0, d.group.begin() + r1)));
    const int eta = p.add(binary_node(Op::add, xb, ga, p));
    const int y = p.add(data_node(std::vector<double>(d.y.begin() + r0, d.y.begin() + r1)));
    add_term(p, density_node(Family::normal, {y, eta, sigma}));
    const int prob = p.add(unary_node(Op::ilogit, eta, p));
    const int z = p.add(data_node(std::vector<double>(d.z.begin() + r0, d.z.begin() + r1)));
    add_term(p, density_node(Family::bernoulli, {z, prob}));
  }
  lockstep::plan(p);
  return p;
}

struct Result {
  std::vector<double> lp, grad;
};

Result run(const Program& p, long chains, const std::vector<double>& state, ExecOptions o) {
  Executor<double> ex(p, chains, o);
  Result r{std::vector<double>(chains, 0), std::vector<double>(chains * p.n_free, 0)};
  ex.log_density(state.data(), r.lp.data(), r.grad.data());
  return r;
}

// Largest |a - b| / max(1, |a|, |b|) over the elements: relative, with an
// absolute floor for values near zero.
double worst(const std::vector<double>& a, const std::vector<double>& b) {
  double w = a.size() == b.size() ? 0 : HUGE_VAL;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double scale = std::max({1.0, std::fabs(a[i]), std::fabs(b[i])});
    const double e = std::fabs(a[i] - b[i]) / scale;
    if (!(e <= w)) w = e;  // NaN counts as worst
  }
  return w;
}

void test_spmd(const Data& d, long chains, ExecOptions o, Order order, double share,
               const std::string& label) {
  const long D = n_free(d);
  std::mt19937 rng(7);
  const std::vector<double> state = uniform_vector(rng, chains * D, -0.7, 0.7);

  // Single process, every row.
  const Program full = model(d, 0, d.N, true);
  const Result ref = run(full, chains, state, o);

  // This rank's rows; priors on rank 0 only; the other ranks take away the
  // parameters' log Jacobians, which the executor adds on every rank.
  const auto rows = my_rows(d.N, world_rank, world_size, share);
  const Program part = model(d, rows.first, rows.second, world_rank == 0);
  Result mine = run(part, chains, state, o);
  if (world_rank != 0) {
    const Result jac = run(model(d, 0, 0, false, false), chains, state, o);
    for (long c = 0; c < chains; ++c) mine.lp[c] -= jac.lp[c];
    for (long k = 0; k < chains * D; ++k) mine.grad[k] -= jac.grad[k];
  }
  const Result partial = mine;

  MpiCommunicator comm(MPI_COMM_WORLD, order);
  double* lp[] = {mine.lp.data()};
  double* grad[] = {mine.grad.data()};
  comm.all_reduce_sum(lp, chains);
  comm.all_reduce_sum(grad, chains * D);

  std::ostringstream rows_s;
  rows_s << "rows [" << rows.first << ", " << rows.second << ") of " << d.N;
  const std::string what = "SPMD " + label + " (" + order_name(order) + ")";
  const double e_lp = worst(mine.lp, ref.lp), e_grad = worst(mine.grad, ref.grad);
  bool finite = true;
  for (double v : ref.lp) finite = finite && std::isfinite(v);
  expect(finite, what + ": the single-process log density is finite");
  expect(e_lp <= 1e-12, what + ": all-reduced lp equals the single-process lp to 1e-12",
         rows_s.str() + ", worst relative error " + std::to_string(e_lp));
  expect(e_grad <= 1e-12,
         what + ": all-reduced gradient equals the single-process gradient to 1e-12",
         rows_s.str() + ", worst relative error " + std::to_string(e_grad));
  // Both collectives on every rank (no short-circuit: ranks must not diverge).
  const bool same_lp = same_on_all_ranks(mine.lp), same_grad = same_on_all_ranks(mine.grad);
  expect(same_lp && same_grad, what + ": lp and gradient bitwise the same on every rank");
  // Not vacuous: a rank's own partial is not the whole.
  expect(worst(partial.lp, ref.lp) > 1e-6 && worst(partial.grad, ref.grad) > 1e-6,
         what + ": this rank's partial alone differs from the whole");
}

// The executor's own reduction across processes (ExecOptions::world): every
// rank builds the whole model (priors included) over its own rows; the
// executor sums only the observation stage's partials across ranks, so each
// rank's log density and gradient are the whole model's, with the priors and
// Jacobians counted once.
void test_executor_world(const Data& d, long chains, ExecOptions o, double share,
                         const std::string& label) {
  const long D = n_free(d);
  std::mt19937 rng(11);
  const std::vector<double> state = uniform_vector(rng, chains * D, -0.7, 0.7);
  const Result ref = run(model(d, 0, d.N, true), chains, state, o);
  const auto rows = my_rows(d.N, world_rank, world_size, share);
  MpiCommunicator comm(MPI_COMM_WORLD, Order::rank);
  ExecOptions spmd = o;
  spmd.world = &comm;
  const Program part = model(d, rows.first, rows.second, true);
  const Result mine = run(part, chains, state, spmd);
  const std::string what = "executor across ranks, " + label;
  const double e_lp = worst(mine.lp, ref.lp), e_grad = worst(mine.grad, ref.grad);
  expect(e_lp <= 1e-12, what + ": lp equals the single-process lp to 1e-12",
         "worst relative error " + std::to_string(e_lp));
  expect(e_grad <= 1e-12, what + ": gradient equals the single-process gradient to 1e-12",
         "worst relative error " + std::to_string(e_grad));
  const bool same_lp = same_on_all_ranks(mine.lp), same_grad = same_on_all_ranks(mine.grad);
  expect(same_lp && same_grad, what + ": lp and gradient bitwise the same on every rank");
  // Without the world communicator, a rank's result is only its own rows.
  const Result alone = run(part, chains, state, o);
  expect(worst(alone.lp, ref.lp) > 1e-6, what + ": without it, a rank's lp is not the whole");
  // A program whose likelihood cannot be split by rows is refused.
  ExecOptions plain = spmd;
  plain.observation_stage = false;
  bool refused = false;
  try {
    Executor<double> ex(part, chains, plain);
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  expect(refused, what + ": refused without the observation stage");
}

// broadcast_bytes: rank 0's bytes on every rank, whole and in chunks.
void test_broadcast_bytes() {
  for (long max_count : {static_cast<long>(INT_MAX), 5L}) {
    MpiCommunicator comm(MPI_COMM_WORLD, Order::allreduce, max_count);
    std::vector<double> v(13);
    for (size_t i = 0; i < v.size(); ++i) v[i] = 100.0 * world_rank + static_cast<double>(i) + 0.25;
    comm.broadcast_bytes(v.data(), static_cast<long>(v.size() * sizeof(double)));
    bool ok = true;
    for (size_t i = 0; i < v.size(); ++i) ok = ok && v[i] == static_cast<double>(i) + 0.25;
    expect(ok, "broadcast_bytes leaves rank 0's values on every rank (max_count " +
                   std::to_string(max_count) + ")");
  }
}

// gather_to_root: every rank's values, rank after rank, on rank 0 alone, for
// counts that differ between ranks (one rank sends none), whole and in chunks.
void test_gather_to_root() {
  for (long max_count : {static_cast<long>(INT_MAX), 3L}) {
    MpiCommunicator comm(MPI_COMM_WORLD, Order::rank, max_count);
    std::vector<long> counts(world_size);
    long total = 0;
    for (int r = 0; r < world_size; ++r) total += counts[r] = r == 1 ? 0 : 7 + 2 * r;
    std::vector<double> mine(counts[world_rank]);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = 1000.0 * world_rank + static_cast<double>(i);
    std::vector<double> all(world_rank == 0 ? total : 0, -1.0);
    comm.reset_stats();
    comm.gather_to_root(mine.data(), counts[world_rank], all.data(), counts.data());
    bool ok = comm.stats().bytes == counts[world_rank] * 8;
    if (world_rank == 0) {
      long at = 0;
      for (int r = 0; r < world_size; ++r)
        for (long i = 0; i < counts[r]; ++i) ok = ok && all[at++] == 1000.0 * r + static_cast<double>(i);
    }
    expect(same_on_all_ranks(std::vector<double>{ok ? 1.0 : 0.0}) && ok,
           "gather_to_root: every rank's values in rank order on rank 0 (max_count " +
               std::to_string(max_count) + ")");
  }
}

// Vectors whose sums differ from rank to rank (as a GPU's may, in their last
// bits): each writes its rank into its outputs.
class RankDependentVectors final : public lockstep::ChainVectors {
 public:
  RankDependentVectors(long chains, long dim) : ChainVectors(chains, dim) {}
  double* make() override { return nullptr; }
  void upload(double*, const double*) override {}
  void download(double*, const double*) override {}
  void read_columns(double*, const double*, long) override {}
  void write_columns(double*, const double*, long) override {}
  void copy(double*, const double*, const lockstep::ChainMask&) override {}
  void fill(double*, double, const lockstep::ChainMask&) override {}
  void add(double*, const double*, const double*, double, const lockstep::ChainMask&) override {}
  void leapfrog(double*, const double*, double*, const double*, const double*, double, double,
                bool, const lockstep::ChainMask&, const lockstep::ChainMask&) override {}
  void momentum(double*, const double*, std::vector<lockstep::Stream>&, uint32_t) override {}
  void mean_over_chains(double*, const double*, const lockstep::ChainMask&) override {}
  void window_update(double*, double*, const double*, double, bool,
                     const lockstep::ChainMask&) override {}
  void metric_from_window(double*, double*, const double*, double, bool) override {}
  void dots(const lockstep::DotSpec*, int n, const double*, const lockstep::ChainMask&,
            double* out) override {
    fill_out(out, chains_ * n);
  }
  void subtree_checks(const lockstep::SubtreeVectors&, const double*, const lockstep::ChainMask&,
                      double* out) override {
    fill_out(out, chains_ * 6);
  }
  void leaf(const lockstep::LeafVectors& v, const double*, const lockstep::ChainMask&,
            const lockstep::ChainMask&, double* out) override {
    fill_out(out, chains_ * v.sums());
  }
  void log_density(const double*, double*, double*) override {}

 private:
  static void fill_out(double* out, long n) {
    for (long k = 0; k < n; ++k) out[k] = k + 0.5 * world_rank;
  }
};

// RankAgreedVectors: the sums the sampler decides from are rank 0's.
void test_rank_agreed_vectors() {
  MpiCommunicator comm(MPI_COMM_WORLD, Order::rank);
  const long chains = 3;
  lockstep::RankAgreedVectors v(std::make_unique<RankDependentVectors>(chains, 4), &comm);
  const lockstep::ChainMask all = lockstep::ChainMask::all(chains);
  std::vector<double> dots(chains * 2), checks(chains * 6);
  lockstep::LeafVectors leaf{};
  leaf.checks = 1;
  std::vector<double> leaf_sums(chains * leaf.sums());
  v.dots(nullptr, 2, nullptr, all, dots.data());
  v.subtree_checks(lockstep::SubtreeVectors{}, nullptr, all, checks.data());
  v.leaf(leaf, nullptr, all, all, leaf_sums.data());
  bool ok = true;
  for (const std::vector<double>* out : {&dots, &checks, &leaf_sums})
    for (size_t k = 0; k < out->size(); ++k) ok = ok && (*out)[k] == static_cast<double>(k);
  expect(ok, "RankAgreedVectors: dots, subtree checks and leaf sums are rank 0's on every rank");
  expect(same_on_all_ranks(dots) && same_on_all_ranks(checks) && same_on_all_ranks(leaf_sums),
         "RankAgreedVectors: bitwise the same on every rank");
}

// One rank over an executor that cannot sum across processes itself (the
// GPU's; here the emulated backend stands in for it, running the same kernel
// bodies lane by lane): rank_program() and WorldSumTarget, as R builds a GPU
// rank (gpu_only(mpi = TRUE)). Every rank builds the whole model over its own
// rows; rank 0 counts the priors and Jacobians.
void test_world_sum_target(const Data& d, long chains, double share, const std::string& label) {
  const long D = n_free(d);
  std::mt19937 rng(13);
  const std::vector<double> state = uniform_vector(rng, chains * D, -0.7, 0.7);
  ExecOptions plain;
  plain.observation_stage = false;
  const Result ref = run(model(d, 0, d.N, true), chains, state, plain);
  const auto rows = my_rows(d.N, world_rank, world_size, share);
  const Program part = model(d, rows.first, rows.second, true);
  MpiCommunicator comm(MPI_COMM_WORLD, Order::rank);
  ExecOptions o = plain;
  o.backend = lockstep::Backend::emulated;
  o.geometry = lockstep::EmulatedGeometry{3, 32};
  const Program mine_p = lockstep::rank_program(part, world_rank);
  lockstep::WorldSumTarget t(
      std::make_unique<Executor<double>>(mine_p, chains, lockstep::shard_options(o, world_rank)),
      &comm);
  Result mine{std::vector<double>(chains, 0), std::vector<double>(chains * D, 0)};
  t.log_density(state.data(), mine.lp.data(), mine.grad.data());
  std::vector<double> lp_only(chains, 0);
  t.log_density(state.data(), lp_only.data(), nullptr);
  const std::string what = "rank programs summed by WorldSumTarget, " + label;
  const double e_lp = worst(mine.lp, ref.lp), e_grad = worst(mine.grad, ref.grad);
  expect(e_lp <= 1e-12, what + ": lp equals the single-process lp to 1e-12",
         "worst relative error " + std::to_string(e_lp));
  expect(e_grad <= 1e-12, what + ": gradient equals the single-process gradient to 1e-12",
         "worst relative error " + std::to_string(e_grad));
  expect(worst(lp_only, ref.lp) <= 1e-12, what + ": the same lp without a gradient");
  const bool same_lp = same_on_all_ranks(mine.lp), same_grad = same_on_all_ranks(mine.grad);
  expect(same_lp && same_grad, what + ": lp and gradient bitwise the same on every rank");
  // rank 0 keeps the priors; the others only their rows' terms
  expect(mine_p.terms.size() == (world_rank == 0 ? part.terms.size() : 2),
         what + ": only rank 0 keeps the global terms");
  // A likelihood that is not row-aligned with its data is refused.
  Program unsplit = part;
  lockstep::PlanOptions global_only;
  global_only.observation_stage = false;
  lockstep::plan(unsplit, global_only);
  bool refused = false;
  try {
    lockstep::rank_program(unsplit, world_rank);
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  expect(refused || rows.second - rows.first <= 1,
         what + ": a likelihood not split by rows is refused");
}


// NUTS on the seed model with each rank owning a balanced range of its groups
// (rows sorted by group): the ranks' draws, mapped to the whole state, equal
// one process's with the same seed to 1e-8, in warmup too; every rank
// holds the same global coordinates; a gradient sends C x (1 + globals)
// doubles.
// The seed model (N = 2000, G = 200, K = 3, rows sorted by group) and this
// rank's slice of it: the rows of a balanced range of whole groups.
struct OwnedCase {
  lstest::Seed s;
  lockstep::GroupSlice slice;
};

OwnedCase owned_case(std::mt19937& rng) {
  const long N = 2000, G = 200, K = 3;
  std::uniform_int_distribution<long> group(0, G - 1);
  std::vector<long> g(N);
  for (long& v : g) v = group(rng);
  std::sort(g.begin(), g.end());
  OwnedCase out{lstest::seed_model(N, G, K, rng, g), {}};
  lockstep::plan(out.s.p);
  const Program& p = out.s.p;
  const lockstep::Grouping grouping = lockstep::find_groupings(p).at(0);
  const std::vector<long> bounds =
      lockstep::balanced_group_bounds(grouping.group_of_row, G, world_size);
  const long first = std::lower_bound(g.begin(), g.end(), bounds[world_rank]) - g.begin();
  const long last = std::lower_bound(g.begin(), g.end(), bounds[world_rank + 1]) - g.begin();
  const Program rows = lockstep::rows_program(p, {{first, last}});
  out.slice = lockstep::slice_groups(rows, lockstep::find_groupings(rows).at(0), bounds[world_rank],
                                     bounds[world_rank + 1], world_rank == 0);
  return out;
}

// The largest difference between a rank's draws ([iteration, chain, slice
// dim]) and one process's ([iteration, chain, dim]) at its coordinates,
// relative to max(1, |one process's|).
double owned_draws_gap(const std::vector<double>& draws, const std::vector<double>& ref,
                       const lockstep::GroupSlice& slice, long D) {
  const long Dr = static_cast<long>(slice.full_index.size()), rows = static_cast<long>(draws.size()) / Dr;
  double worst = 0;
  for (long r = 0; r < rows; ++r)
    for (long j = 0; j < Dr; ++j) {
      const double a = draws[r * Dr + j], b = ref[r * D + slice.full_index[j]];
      worst = std::max(worst, std::fabs(a - b) / std::max(1.0, std::fabs(b)));
    }
  return worst;
}

// rwmh() (normal and uniform proposals) and slice() on ranks that own their
// groups: their draws are one process's, the random numbers of each
// coordinate drawn by its index in the whole state and slice()'s direction
// normalised over the whole state.
template <class Sampler, class Settings>
void test_owned_shard_host_sampler(const Settings& settings, long chains, const std::string& label) {
  std::mt19937 rng(33);
  const OwnedCase k = owned_case(rng);
  const long D = k.s.p.n_free;
  const std::vector<double> init = uniform_vector(rng, chains * D, -0.5, 0.5);
  auto drive = [&](lockstep::Sampler& sampler) {
    std::vector<double> draws;
    sampler.begin_warmup(10);
    for (long it = 0; it < 20; ++it) {
      sampler.iterate(it < 10);
      draws.insert(draws.end(), sampler.state().begin(), sampler.state().end());
    }
    return draws;
  };
  Executor<double> whole(k.s.p, chains, ExecOptions{});
  Sampler reference(whole, settings, init, 7u, 11u);
  const std::vector<double> ref = drive(reference);
  MpiCommunicator comm(MPI_COMM_WORLD, Order::rank);
  lockstep::OwnedShardTarget target(
      std::make_unique<Executor<double>>(k.slice.program, chains, ExecOptions{}), k.slice, D, &comm);
  Sampler mine(target, settings, k.slice.of_whole(init.data(), chains, D), 7u, 11u);
  const std::vector<double> draws = drive(mine);
  const double gap = owned_draws_gap(draws, ref, k.slice, D);
  expect(gap <= 1e-8,
         "owned shards, " + label + ": draws (10 of warmup, 10 of sampling) equal one process's to 1e-8",
         "worst error " + std::to_string(gap));
  std::vector<double> globals;  // (the first n_global coordinates of each chain's draws)
  const long Dr = static_cast<long>(k.slice.full_index.size());
  for (size_t r = 0; r < draws.size() / Dr; ++r)
    globals.insert(globals.end(), draws.begin() + r * Dr, draws.begin() + r * Dr + k.slice.n_global);
  expect(same_on_all_ranks(globals),
         "owned shards, " + label + ": the global coordinates are bitwise the same on every rank");
  bool moved = false;
  for (size_t k2 = 0; k2 + chains * D < ref.size(); ++k2) moved = moved || ref[k2] != ref[k2 + chains * D];
  expect(moved, "owned shards, " + label + ": the chains moved");
}

// opt()'s first-order methods and L-BFGS on ranks that own their groups:
// the optimum (30 iterations from the same starts) is one process's, made
// whole.
void test_owned_shard_optimise(const std::string& method) {
  std::mt19937 rng(35);
  const OwnedCase k = owned_case(rng);
  const long D = k.s.p.n_free, C = 2;
  const std::vector<double> init = uniform_vector(rng, C * D, -0.5, 0.5);
  lockstep::OptimiserSettings s;
  s.method = method;
  s.max_iterations = 30;
  s.tolerance = 0;
  Executor<double> whole(k.s.p, C, ExecOptions{});
  const lockstep::OptimiserResult ref = lockstep::optimise(whole, s, init);
  MpiCommunicator comm(MPI_COMM_WORLD, Order::rank);
  lockstep::OwnedShardTarget target(
      std::make_unique<Executor<double>>(k.slice.program, C, ExecOptions{}), k.slice, D, &comm);
  const lockstep::OptimiserResult mine =
      lockstep::optimise(target, s, k.slice.of_whole(init.data(), C, D));
  const double gap = owned_draws_gap(mine.par, ref.par, k.slice, D);
  bool same_value = true;
  for (long c = 0; c < C; ++c)
    same_value = same_value && std::fabs(mine.value[c] - ref.value[c]) <= 1e-9 * std::fabs(ref.value[c]) &&
                 mine.iterations[c] == ref.iterations[c] && mine.convergence[c] == ref.convergence[c];
  bool moved = false;
  for (long k2 = 0; k2 < C * D; ++k2) moved = moved || std::fabs(ref.par[k2] - init[k2]) > 1e-3;
  expect(gap <= 1e-8 && same_value && moved,
         "owned shards, " + method + ": the optimum, its value and iterations are one process's",
         "worst error " + std::to_string(gap));
  expect(same_on_all_ranks(mine.value) && same_on_all_ranks(mine.iterations),
         "owned shards, " + method + ": every rank has the same values and iterations");
}

// NUTS with a dense metric over the global coordinates (the slice's first,
// replicated) and a diagonal one over each rank's own groups: warmup's
// windows learn the same factor on every rank and each rank its own scales,
// so the draws are one process's with a metric over the same coordinates
// (up to the order of sums).
void test_owned_shard_dense_nuts(long chains, long warmup, long sampling) {
  std::mt19937 rng(37);
  const OwnedCase k = owned_case(rng);
  const Program& p = k.s.p;
  const long D = p.n_free;
  const std::vector<long> globals = lockstep::global_coordinates(p);
  expect(std::vector<long>(k.slice.full_index.begin(), k.slice.full_index.begin() + k.slice.n_global) ==
             globals,
         "owned shards, dense metric: the slice's global coordinates are the model's, in order");
  const std::vector<double> init = uniform_vector(rng, chains * D, -0.5, 0.5);
  lockstep::NutsSettings settings;
  settings.epsilon = 0.1;
  auto drive = [&](lockstep::Sampler& sampler, std::vector<double>& draws) {
    sampler.begin_warmup(warmup);
    std::vector<double> x(sampler.state().size());
    for (long it = 0; it < warmup + sampling; ++it) {
      sampler.iterate(it < warmup);
      sampler.to_model(sampler.state().data(), x.data(), chains);
      draws.insert(draws.end(), x.begin(), x.end());
    }
  };
  Executor<double> whole(p, chains, ExecOptions{});
  lockstep::DenseMetric whole_metric(whole, {}, globals);
  std::vector<double> y(chains * D);
  whole_metric.to_sampler(init.data(), y.data());
  lockstep::Nuts reference(whole_metric, settings, y, 7u, 11u);
  reference.use_dense_metric(whole_metric);
  std::vector<double> ref_draws;
  drive(reference, ref_draws);

  MpiCommunicator comm(MPI_COMM_WORLD, Order::rank);
  lockstep::OwnedShardTarget target(
      std::make_unique<Executor<double>>(k.slice.program, chains, ExecOptions{}), k.slice, D, &comm);
  std::vector<long> first(k.slice.n_global);
  for (long j = 0; j < k.slice.n_global; ++j) first[j] = j;
  lockstep::DenseMetric metric(target, {}, first);
  const std::vector<double> init_r = k.slice.of_whole(init.data(), chains, D);
  std::vector<double> y_r(init_r.size());
  metric.to_sampler(init_r.data(), y_r.data());
  lockstep::Nuts mine(metric, settings, y_r, 7u, 11u);
  mine.use_dense_metric(metric);
  std::vector<double> draws;
  drive(mine, draws);
  const double gap = owned_draws_gap(draws, ref_draws, k.slice, D);
  // (warmup's step size and metric amplify the reassociated sums' last bits
  // faster than sampling alone: 1e-15 grows to about 1e-6 by the end of the
  // first window; a wrong sum or coordinate would differ by O(1))
  double factor_gap = 0;
  for (size_t j = 0; j < metric.factor().size(); ++j)
    factor_gap = std::max(factor_gap, std::fabs(metric.factor()[j] - whole_metric.factor()[j]) /
                                          std::max(1e-3, std::fabs(whole_metric.factor()[j])));
  expect(gap <= 1e-4 && factor_gap <= 1e-4 && metric.is_dense(0),
         "owned shards, dense metric over the globals: NUTS draws (" + std::to_string(warmup) +
             " of warmup, " + std::to_string(sampling) + " of sampling) and the factor equal one "
             "process's to 1e-4",
         "worst error " + std::to_string(gap) + ", factor " + std::to_string(factor_gap));
  expect(same_on_all_ranks(metric.factor()),
         "owned shards, dense metric over the globals: every rank learns the same factor");
}

// svi() on ranks that own their groups: each rank fits its own groups'
// guide parameters and the replicated global ones; the losses and the guide
// (made whole) are one process's.
void test_owned_shard_svi(double alpha, const std::string& guide = "mean_field") {
  std::mt19937 rng(39);
  const OwnedCase k = owned_case(rng);
  const long D = k.s.p.n_free, C = 3;
  const std::vector<double> init = uniform_vector(rng, D, -0.5, 0.5);
  lockstep::SviSettings s;
  s.optimiser.method = "adam";
  s.optimiser.params["learning_rate"] = 0.05;
  s.alpha = alpha;
  s.guide = guide;
  s.rank = 2;
  Executor<double> whole(k.s.p, C, ExecOptions{});
  lockstep::Svi reference(whole, s, init, 5u, 6u);
  MpiCommunicator comm(MPI_COMM_WORLD, Order::rank);
  lockstep::OwnedShardTarget target(
      std::make_unique<Executor<double>>(k.slice.program, C, ExecOptions{}), k.slice, D, &comm);
  lockstep::Svi mine(target, s, k.slice.of_whole(init.data(), 1, D), 5u, 6u);
  double loss_gap = 0;
  std::vector<double> losses;
  for (int t = 0; t < 30; ++t) {
    const double a = mine.step(), b = reference.step();
    losses.push_back(a);
    loss_gap = std::max(loss_gap, std::fabs(a - b) / std::max(1.0, std::fabs(b)));
  }
  const double mean_gap = owned_draws_gap(mine.mean(), reference.mean(), k.slice, D);
  const double sd_gap = owned_draws_gap(mine.sd(), reference.sd(), k.slice, D);
  const std::string label =
      "owned shards, svi (" + guide + ", alpha " + std::to_string(alpha).substr(0, 3) + ")";
  expect(loss_gap <= 1e-9 && mean_gap <= 1e-8 && sd_gap <= 1e-8 && std::isfinite(losses.back()),
         label + ": 30 iterations' losses and the guide equal one process's",
         "losses " + std::to_string(loss_gap) + ", mean " + std::to_string(mean_gap) + ", sd " +
             std::to_string(sd_gap));
  expect(same_on_all_ranks(losses), label + ": every rank has the same losses");
}

// Minibatches on ranks that own their groups: each rank draws its own tiles
// (the part: its rank), so the mean over many draws of the log density
// (summed over the ranks) and of each rank's coordinates' gradient is one
// process's whole-data value, within Monte Carlo error (4.5 standard errors
// per value; exact where a value does not vary).
void test_owned_shard_minibatch() {
  std::mt19937 rng(41);
  const OwnedCase k = owned_case(rng);
  const long D = k.s.p.n_free, C = 2;
  const std::vector<double> state = uniform_vector(rng, C * D, -0.5, 0.5);
  Executor<double> whole(k.s.p, C, ExecOptions{});
  std::vector<double> lp_whole(C), g_whole(C * D);
  whole.log_density(state.data(), lp_whole.data(), g_whole.data());
  MpiCommunicator comm(MPI_COMM_WORLD, Order::rank);
  ExecOptions o;
  o.tile_rows = 20;
  o.threads = 2;
  lockstep::OwnedShardTarget target(
      std::make_unique<Executor<double>>(k.slice.program, C, o), k.slice, D, &comm);
  const long Dr = target.dim();
  const std::vector<double> mine = k.slice.of_whole(state.data(), C, D);
  lockstep::Minibatch batch;
  batch.fraction = 0.2;
  batch.key0 = 3;
  batch.key1 = 4;
  const long n = 2000;
  std::vector<double> sum(C + C * Dr, 0.0), sum2(sum.size(), 0.0), lp(C), g(C * Dr);
  std::vector<double> first_lp;
  for (long d = 1; d <= n; ++d) {
    batch.draw = d;
    target.set_minibatch(batch);
    target.log_density(mine.data(), lp.data(), g.data());
    if (d == 1) first_lp = lp;
    for (long c = 0; c < C; ++c) sum[c] += lp[c], sum2[c] += lp[c] * lp[c];
    for (long i = 0; i < C * Dr; ++i) sum[C + i] += g[i], sum2[C + i] += g[i] * g[i];
  }
  std::vector<double> expected(lp_whole);
  for (long c = 0; c < C; ++c)
    for (long j = 0; j < Dr; ++j) expected.push_back(g_whole[c * D + k.slice.full_index[j]]);
  long bad = 0, varying = 0;
  for (size_t i = 0; i < sum.size(); ++i) {
    const double mean = sum[i] / n, se = std::sqrt(std::max(0.0, sum2[i] / n - mean * mean) / n);
    if (se > 1e-9 * (1 + std::fabs(mean))) ++varying;
    if (std::fabs(mean - expected[i]) > 4.5 * se + 1e-9 * (1 + std::fabs(expected[i]))) ++bad;
  }
  expect(bad == 0 && varying > C,
         "owned shards, minibatches: the mean over 2000 draws of the log density and each rank's "
         "gradient is one process's whole-data value",
         std::to_string(bad) + " values outside 4.5 standard errors, " + std::to_string(varying) +
             " varying");
  expect(same_on_all_ranks(first_lp), "owned shards, minibatches: every rank has the same log density");
}

void test_owned_shard_nuts(long chains, long warmup, long sampling, const std::string& label) {
  std::mt19937 rng(31);
  const OwnedCase k = owned_case(rng);
  const long K = 3;
  const lstest::Seed& s = k.s;
  const Program& p = s.p;
  const long D = p.n_free;
  const std::vector<double> init = uniform_vector(rng, chains * D, -0.5, 0.5);
  lockstep::NutsSettings settings;
  settings.epsilon = 0.1;
  settings.diag_sd = {1.0};
  auto drive = [&](lockstep::Sampler& sampler, std::vector<double>& draws) {
    if (warmup > 0) sampler.begin_warmup(warmup);
    for (long it = 0; it < warmup + sampling; ++it) {
      sampler.iterate(it < warmup);
      draws.insert(draws.end(), sampler.state().begin(), sampler.state().end());
    }
  };
  Executor<double> whole(p, chains, ExecOptions{});
  lockstep::Nuts reference(whole, settings, init, 7u, 11u);
  std::vector<double> ref_draws;
  drive(reference, ref_draws);

  const lockstep::GroupSlice& slice = k.slice;
  MpiCommunicator comm(MPI_COMM_WORLD, Order::rank);
  lockstep::OwnedShardTarget target(
      std::make_unique<Executor<double>>(slice.program, chains, ExecOptions{}), slice, D, &comm);
  const long Dr = target.dim();
  const std::vector<double> init_r = slice.of_whole(init.data(), chains, D);
  comm.reset_stats();
  {
    std::vector<double> lp(chains), grad(chains * Dr);
    target.log_density(init_r.data(), lp.data(), grad.data());
  }
  const lockstep::CommunicatorStats one = comm.stats();
  expect(one.calls == 1 && one.bytes == chains * (1 + 2 * K + 2) * 8,
         "owned shards, " + label + ": a gradient all-reduces C x (1 + globals) doubles",
         std::to_string(one.calls) + " calls, " + std::to_string(one.bytes) + " bytes");
  lockstep::Nuts mine(target, settings, init_r, 7u, 11u);
  std::vector<double> draws;
  drive(mine, draws);
  const double worst_error = owned_draws_gap(draws, ref_draws, slice, D);
  const long iterations = warmup + sampling;
  expect(worst_error <= 1e-8,
         "owned shards, " + label + ": NUTS draws (warmup and sampling) equal one process's to 1e-8",
         "worst error " + std::to_string(worst_error));
  std::vector<double> globals;
  for (long it = 0; it < iterations; ++it)
    for (long c = 0; c < chains; ++c)
      for (long j = 0; j < slice.n_global; ++j) globals.push_back(draws[(it * chains + c) * Dr + j]);
  expect(same_on_all_ranks(globals),
         "owned shards, " + label + ": the global coordinates are bitwise the same on every rank");
  expect(mine.epsilon() == reference.epsilon() || std::fabs(mine.epsilon() / reference.epsilon() - 1) < 1e-8,
         "owned shards, " + label + ": the adapted step size is one process's");
  // the ranks hold their own groups only: fewer coordinates than the whole
  expect(world_size == 1 || Dr < D, "owned shards, " + label + ": a rank holds part of the state");
  // made whole: on rank 0 from each rank's own coordinates (it sends them
  // once), then on every rank
  lockstep::WholeState made_whole(slice, D, comm);
  const double* final_state = draws.data() + (iterations - 1) * chains * Dr;
  const double* ref_last = ref_draws.data() + (iterations - 1) * chains * D;
  std::vector<double> on_root(chains * D, 0.0);
  comm.reset_stats();
  made_whole.to_root(final_state, chains, world_rank == 0 ? on_root.data() : nullptr);
  const long sent = comm.stats().bytes;
  const long own = Dr - (world_rank == 0 ? 0 : slice.n_global);
  bool root_ok = true;
  if (world_rank == 0)
    for (long k = 0; k < chains * D; ++k)
      root_ok = root_ok && std::fabs(on_root[k] - ref_last[k]) <= 1e-8 * std::max(1.0, std::fabs(ref_last[k]));
  expect(same_on_all_ranks(std::vector<double>{root_ok ? 1.0 : 0.0}) && root_ok && sent == chains * own * 8,
         "owned shards, " + label + ": WholeState::to_root gives rank 0 the whole last draw, "
         "each rank sending only its own coordinates", std::to_string(sent) + " bytes sent");
  std::vector<double> everywhere(chains * D, 0.0);
  made_whole.to_all(final_state, chains, everywhere.data());
  bool all_ok = true;
  for (long k = 0; k < chains * D; ++k)
    all_ok = all_ok && std::fabs(everywhere[k] - ref_last[k]) <= 1e-8 * std::max(1.0, std::fabs(ref_last[k]));
  expect(same_on_all_ranks(everywhere) && all_ok,
         "owned shards, " + label + ": WholeState::to_all gives every rank the whole last draw");
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (world_rank == 0) std::printf("test_mpi_communicator: %d ranks\n", world_size);
  try {
    test_communicator_basics();
    for (Order o : {Order::allreduce, Order::rank}) {
      test_known_sums<double>(o, 1000, 1 << 30);
      test_known_sums<float>(o, 1000, 1 << 30);
      test_known_sums<double>(o, 100, 7);
      test_known_sums<float>(o, 100, 7);
      test_random_sums<double>(o, 1001, 1 << 30);
      test_random_sums<float>(o, 1001, 1 << 30);
      test_random_sums<double>(o, 1001, 64);
      test_random_sums<float>(o, 1001, 64);
    }

    const Data d = make_data(1001, 3, 6);
    ExecOptions tiled;  // observation stage, one thread, one virtual device
    test_spmd(d, 3, tiled, Order::allreduce, 0.5, "tiled executor, even split");
    test_spmd(d, 3, tiled, Order::rank, 0.5, "tiled executor, even split");
    ExecOptions sharded;
    sharded.threads = 2;
    sharded.devices = 2;
    sharded.tile_rows = 64;
    test_spmd(d, 4, sharded, Order::allreduce, 0.37,
              "2 threads x 2 virtual devices per rank, tiles of 64, uneven split");
    ExecOptions plain;
    plain.observation_stage = false;
    test_spmd(d, 2, plain, Order::rank, 0.8, "plain op-by-op executor, uneven split");
    test_executor_world(d, 3, tiled, 0.5, "even split");
    test_executor_world(d, 4, sharded, 0.37, "2 threads x 2 virtual devices per rank");
    test_broadcast_bytes();
    test_gather_to_root();
    test_rank_agreed_vectors();
    test_world_sum_target(d, 3, 0.5, "even split");
    test_world_sum_target(d, 2, 0.37, "uneven split");
    // (trajectories from random starts amplify the reassociated sums' last
    // bits by about 4x an iteration: 1e-15 grows to 1e-8 in some 15)
    test_owned_shard_nuts(4, 0, 20, "4 chains, 20 iterations of sampling");
    test_owned_shard_nuts(4, 8, 4, "4 chains, 8 of warmup and 4 of sampling");
    test_owned_shard_nuts(1, 10, 10, "1 chain, 10 of warmup and 10 of sampling");
    {
      lockstep::RwmhSettings normal;
      normal.epsilon = 0.3;
      normal.diag_sd = {1.0};
      test_owned_shard_host_sampler<lockstep::Rwmh>(normal, 3, "rwmh(), normal proposals");
      lockstep::RwmhSettings uniform = normal;
      uniform.uniform = true;
      test_owned_shard_host_sampler<lockstep::Rwmh>(uniform, 2, "rwmh(), uniform proposals");
      lockstep::SliceSettings slice;
      slice.diag_sd = {1.0};
      test_owned_shard_host_sampler<lockstep::Slice>(slice, 3, "slice()");
    }
    test_owned_shard_optimise("adam");
    test_owned_shard_optimise("bfgs");
    test_owned_shard_svi(1);
    test_owned_shard_svi(0);
    test_owned_shard_svi(1, "low_rank");
    test_owned_shard_svi(0, "low_rank");
    test_owned_shard_minibatch();
    test_owned_shard_dense_nuts(3, 20, 2);
    test_owned_shard_dense_nuts(4, 20, 2);
  } catch (const std::exception& e) {
    // A collective left half-done would hang the other ranks: abort them all.
    std::fprintf(stderr, "rank %d: exception: %s\n", world_rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  if (world_rank == 0) {
    std::printf("%s: %d passed, %d failed\n", n_failed ? "FAIL" : "PASS", n_passed, n_failed);
    std::printf("mpi-counts: %d %d\n", n_passed, n_failed);
  }
  MPI_Finalize();
  return n_failed ? 1 : 0;
}
