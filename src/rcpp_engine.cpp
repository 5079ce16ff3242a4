// The Rcpp boundary of the engine: the IR list built by R (R/lower.R) becomes a
// lockstep::Program, and engines and samplers live behind external pointers.
// Every exported function runs inside Rcpp's exception guard (RcppExports), so
// a C++ exception reaches R as an R error.
#include <Rcpp.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lockstep/device_shards.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/ir.hpp"
#include "lockstep/optimiser.hpp"
#include "lockstep/owned_shard.hpp"
#include "lockstep/planner.hpp"
#include "lockstep/sampler/sampler_factory.hpp"
#include "lockstep/shards.hpp"
#include "lockstep/targets.hpp"
#include "mpi_world.h"
#include "rcpp_engine.h"
#include "rcpp_saved_state.h"

using namespace Rcpp;

namespace {

// A data frame of named columns, each `rows` long, made as R stores one
// (class and compact row names set on the list). Rcpp's DataFrame::create
// goes through R's as.data.frame(), which deparses its arguments: two of them
// per ls_sampler_run() call were a quarter of a small model's mcmc().
List data_frame(List columns, long rows) {
  columns.attr("row.names") =
      rows > 0 ? IntegerVector::create(NA_INTEGER, -static_cast<int>(rows)) : IntegerVector(0);
  columns.attr("class") = "data.frame";
  return columns;
}

// Tracing reads node values, in double whatever the precision, from the
// subprogram the traced nodes are computed from (so that tracing parameters
// never computes the likelihood's observation-sized values), op by op.
struct Tracer {
  lockstep::Program program;
  std::vector<int> ids;  // the traced nodes' ids in `program`
  std::unique_ptr<lockstep::Executor<double>> executor;

  // The traced values of `chains` chain-major states x ([chains, n_free]):
  // chain c's k-th value (the nodes' elements, column-major, side by side)
  // at out[c * chain_stride + k * value_stride] (a node without the chain
  // dimension gives every chain its one value).
  void values(const double* x, long chains, double* out, long chain_stride, long value_stride) {
    executor->forward(x);
    long col = 0;
    for (int id : ids) {
      const lockstep::Node& node = program.nodes[id];
      const std::vector<double>& v = executor->value(id);
      for (long i = 0; i < node.size; ++i, ++col)
        for (long c = 0; c < chains; ++c)
          out[c * chain_stride + col * value_stride] = node.chain ? v[c * node.size + i] : v[i];
    }
  }
};

// The number of values of the nodes `nodes` (0-based ids) of `program`, which
// are checked.
long traced_width(const lockstep::Program& program, const std::vector<int>& nodes) {
  long width = 0;
  for (int id : nodes) {
    if (id < 0 || id >= static_cast<int>(program.nodes.size())) stop("node id out of range");
    width += program.nodes[id].size;
  }
  return width;
}

std::unique_ptr<Tracer> make_tracer(const lockstep::Program& program, long chains,
                                    lockstep::ExecOptions o, const std::vector<int>& nodes) {
  // Traced values are computed on each process alone: the parameters and
  // what depends on them are the same on every rank.
  o.observation_stage = false;
  o.world = nullptr;
  o.alias_parameters = false;  // tracing reads parameters' own values
  // and on the CPU: traced values are few and small, and come back to R.
  if (o.backend == lockstep::Backend::cuda) o.backend = lockstep::Backend::cpu;
  auto t = std::make_unique<Tracer>();
  t->program = lockstep::subprogram(program, nodes, &t->ids);
  lockstep::plan(t->program);
  t->executor = std::make_unique<lockstep::Executor<double>>(t->program, chains, o);
  return t;
}

// A planned program and its executors, one per (chains, compute options), in
// the model's precision (float32 values with double sums for "single").
struct Engine {
  std::shared_ptr<lockstep::Program> program;
  bool single = false;
  // ls_engine_log_density()'s chain-major state and gradient, kept between
  // calls: fresh ones (67 MB each for the seed model's 4 chains) cost a page
  // fault per 4 KB page at every call, twice the engine's own time there.
  // (Every executor writes the whole gradient.)
  std::vector<double> state_buffer, grad_buffer;
  // One copy of the program's row data for all its executors (and the
  // samplers' and svi()'s: shared, since they may be made after the engine's
  // pointer is gone)
  std::shared_ptr<lockstep::RowStore> rows;
  std::unique_ptr<lockstep::TargetCache> executors;  // over *program
  std::map<std::tuple<long, int, std::vector<int>>, std::unique_ptr<Tracer>> tracers;

  Tracer& tracer(long chains, const lockstep::ExecOptions& o, const std::vector<int>& nodes) {
    auto key = std::make_tuple(chains, static_cast<int>(o.backend), nodes);
    auto it = tracers.find(key);
    if (it == tracers.end()) {
      if (tracers.size() > 8) tracers.clear();
      it = tracers.emplace(key, make_tracer(*program, chains, o, nodes)).first;
    }
    return *it->second;
  }

  lockstep::Target& executor(long chains, const lockstep::ExecOptions& o) {
    return executors->get(chains, o);
  }
};

// A sampler with the executor it steps (sampler_factory.hpp) and the program
// (shared with the engine, so that the sampler stays valid whatever happens
// to the engine's pointer).
struct SamplerHandle {
  std::shared_ptr<lockstep::Program> program;
  std::shared_ptr<lockstep::RowStore> rows;  // the engine's (Engine::rows)
  lockstep::SamplerBundle bundle;
  // MPI ranks must make the same leapfrog steps and iterations (each is a
  // collective call), so a rank never ends one early on its own interrupt.
  bool across_processes = false;
  // The compute options it was made with, and the tracer of the nodes
  // ls_sampler_run() was last asked to trace (made on first use).
  lockstep::ExecOptions options;
  std::vector<int> traced;
  std::unique_ptr<Tracer> tracer;
  // where ranks own their groups (bundle.slice): their states made whole
  std::unique_ptr<lockstep::WholeState> whole;

  Tracer& tracer_of(const std::vector<int>& nodes) {
    if (!tracer || nodes != traced) {
      tracer = make_tracer(*program, bundle.executor->chains(), options, nodes);
      traced = nodes;
    }
    return *tracer;
  }
};

template <class T> T* checked_pointer(SEXP x, const char* what) {
  if (TYPEOF(x) != EXTPTRSXP) stop("expected an external pointer to a lockstep %s", what);
  T* p = static_cast<T*>(R_ExternalPtrAddr(x));
  if (p == nullptr)
    stop("the lockstep %s is no longer available (was it saved and reloaded?); build the model again",
         what);
  return p;
}

template <class T> void finalize(SEXP x) {
  T* p = static_cast<T*>(R_ExternalPtrAddr(x));
  if (p) {
    delete p;
    R_ClearExternalPtr(x);
  }
}

std::vector<long> as_longs(SEXP x) {
  std::vector<long> out;
  if (Rf_isNull(x)) return out;
  NumericVector v(x);
  out.reserve(v.size());
  for (double d : v) out.push_back(static_cast<long>(d));
  return out;
}

// R's numbers (integer, logical or double) as doubles, read in place:
// Rcpp's as<std::vector<double>>() of an integer vector first makes a double
// copy of it in R (at 10^8 rows, 800 MB more at the peak).
std::vector<double> as_doubles(SEXP x) {
  const R_xlen_t n = Rf_xlength(x);
  if (TYPEOF(x) == REALSXP) return std::vector<double>(REAL(x), REAL(x) + n);
  if (TYPEOF(x) != INTSXP && TYPEOF(x) != LGLSXP) stop("lockstep: data values must be numbers");
  const int* v = TYPEOF(x) == INTSXP ? INTEGER(x) : LOGICAL(x);
  return std::vector<double>(v, v + n);
}

// A data node's values from R: a double vector is borrowed, not copied (the
// user's 10^6 x 20 design matrix is 160 MB), its R protection held with the
// values for as long as any copy of the program reads them (programs and
// executors are made and freed on R's thread, where R_ReleaseObject may
// run); integers and logicals become the node's own doubles.
lockstep::DataValues data_values(SEXP x) {
  if (TYPEOF(x) != REALSXP) return as_doubles(x);
  auto keep = std::make_shared<const NumericVector>(x);
  return lockstep::DataValues::borrow(REAL(x), static_cast<size_t>(Rf_xlength(x)), keep);
}

// An index R records 1-based (R's own positions; 0 where a segment op
// leaves a row out) as the engine's 0-based one, read in place.
std::vector<long> as_index(SEXP x) {
  const R_xlen_t n = Rf_xlength(x);
  std::vector<long> out(static_cast<size_t>(n));
  if (TYPEOF(x) == INTSXP) {
    const int* v = INTEGER(x);
    for (R_xlen_t k = 0; k < n; ++k) out[k] = static_cast<long>(v[k]) - 1;
  } else if (TYPEOF(x) == REALSXP) {
    const double* v = REAL(x);
    for (R_xlen_t k = 0; k < n; ++k) out[k] = static_cast<long>(v[k]) - 1;
  } else {
    stop("lockstep: an index must be numbers");
  }
  return out;
}

double scalar_or(const List& l, const char* name, double fallback) {
  if (!l.containsElementNamed(name) || Rf_isNull(l[name])) return fallback;
  return as<double>(l[name]);
}

lockstep::Program program_from_ir(const List& ir) {
  lockstep::Program p;
  p.n_free = static_cast<long>(as<double>(ir["n_free"]));
  List nodes = ir["nodes"];
  for (R_xlen_t k = 0; k < nodes.size(); ++k) {
    List n = nodes[k];
    lockstep::Node node;
    node.op = lockstep::op_from_name(as<std::string>(n["op"]));
    if (n.containsElementNamed("inputs") && !Rf_isNull(n["inputs"])) {
      IntegerVector in = n["inputs"];
      node.inputs.assign(in.begin(), in.end());
    }
    node.dim = as_longs(n["dim"]);
    node.size = 1;
    for (long d : node.dim) node.size *= d;
    if (n.containsElementNamed("values") && !Rf_isNull(n["values"]))
      node.values = data_values(n["values"]);
    if (n.containsElementNamed("offset")) node.offset = static_cast<long>(as<double>(n["offset"]));
    if (n.containsElementNamed("transform"))
      node.transform = lockstep::transform_from_name(as<std::string>(n["transform"]));
    node.lower = scalar_or(n, "lower", -HUGE_VAL);
    node.upper = scalar_or(n, "upper", HUGE_VAL);
    if (n.containsElementNamed("index") && !Rf_isNull(n["index"])) node.index = as_index(n["index"]);
    // R records a segment op's grouping (its group per input row, 0: left
    // out; -1 after as_index()); its kernels read the rows sorted by group
    // as well
    if (lockstep::op_family(node.op) == lockstep::OpFamily::segment)
      node.index = lockstep::segment_layout(node.index, node.dim[0]);
    if (n.containsElementNamed("family"))
      node.family = lockstep::family_from_name(as<std::string>(n["family"]));
    node.trunc_lower = scalar_or(n, "trunc_lower", -HUGE_VAL);
    node.trunc_upper = scalar_or(n, "trunc_upper", HUGE_VAL);
    p.add(std::move(node));
  }
  IntegerVector terms = ir["terms"];
  p.terms.assign(terms.begin(), terms.end());
  lockstep::plan(p);
  return p;
}

// compute options from R (R/compute_options.R): list(backend, threads,
// devices, tile_rows, observation_stage) and, where given, mpi, jacobian, gpu
// (one or more devices), threads_auto, tile_kernel and first_writers.
lockstep::ExecOptions exec_options(const List& o) {
  lockstep::ExecOptions e;
  e.backend = lockstep::backend_from_name(as<std::string>(o["backend"]));
  e.threads = as<int>(o["threads"]);
  e.devices = as<int>(o["devices"]);
  e.tile_rows = static_cast<long>(as<double>(o["tile_rows"]));
  e.observation_stage = as<bool>(o["observation_stage"]);
  if (o.containsElementNamed("mpi") && as<bool>(o["mpi"])) e.world = mpi_world();
  if (o.containsElementNamed("jacobian")) e.jacobian = as<bool>(o["jacobian"]);
  if (o.containsElementNamed("gpu")) {
    const IntegerVector gpus = o["gpu"];
    if (gpus.size() < 1) stop("compute options: no GPU named");
    e.gpu = gpus[0];
    if (gpus.size() > 1) e.gpus.assign(gpus.begin(), gpus.end());
  }
  if (o.containsElementNamed("threads_auto")) e.threads_auto = as<bool>(o["threads_auto"]);
  if (o.containsElementNamed("tile_kernel")) e.tile_kernel = as<bool>(o["tile_kernel"]);
  // (false only for the benchmarks' comparison: bench/demand_log_density.R)
  if (o.containsElementNamed("first_writers")) e.first_writers = as<bool>(o["first_writers"]);
  // (tracer() turns it off: tracing reads parameters' values)
  e.alias_parameters = true;
  return e;
}

// R matrices are column-major [chains, dim]; the engine wants chain-major rows.
void chain_major_into(const NumericMatrix& m, std::vector<double>& out) {
  const long C = m.nrow(), D = m.ncol();
  out.resize(C * D);
  for (long i = 0; i < D; ++i)  // m's order: each of its pages read once
    for (long c = 0; c < C; ++c) out[c * D + i] = m(c, i);
}

std::vector<double> chain_major(const NumericMatrix& m) {
  std::vector<double> out;
  chain_major_into(m, out);
  return out;
}

}  // namespace

lockstep::ExecOptions engine_exec_options(const List& options) { return exec_options(options); }

std::shared_ptr<lockstep::Program> engine_program(SEXP engine, bool* single,
                                                  std::shared_ptr<lockstep::RowStore>* rows) {
  Engine* e = checked_pointer<Engine>(engine, "engine");
  *single = e->single;
  if (rows) *rows = e->rows;
  return e->program;
}

// [[Rcpp::export]]
SEXP ls_engine_new(List ir) {
  auto engine = std::make_unique<Engine>();
  engine->program = std::make_shared<lockstep::Program>(program_from_ir(ir));
  engine->single = ir.containsElementNamed("precision") &&
                   as<std::string>(ir["precision"]) == "single";
  engine->rows = std::make_shared<lockstep::RowStore>(*engine->program);
  engine->executors =
      std::make_unique<lockstep::TargetCache>(*engine->program, engine->single, engine->rows.get());
  XPtr<Engine> ptr(engine.release(), false);
  R_RegisterCFinalizerEx(ptr, finalize<Engine>, TRUE);
  ptr.attr("class") = "lockstep_engine";
  return ptr;
}

// What the engine's data take (bytes): the program's arrays (data values
// of its own, not those borrowed from R, and indices), the most rows of one
// likelihood, and what its first executor's observation stages add at most
// (stage_row_bytes()).
// [[Rcpp::export]]
NumericVector ls_engine_memory(SEXP engine) {
  Engine* e = checked_pointer<Engine>(engine, "engine");
  const lockstep::Program& p = *e->program;
  double program = 0, rows = 0;
  for (const lockstep::Node& n : p.nodes)
    program += static_cast<double>((n.values.borrowed() ? 0 : n.values.size() * sizeof(double)) +
                                   n.index.size() * sizeof(long));
  for (long r : p.extents) rows = std::max(rows, static_cast<double>(r));
  const double stages = static_cast<double>(lockstep::stage_row_bytes(p, e->single ? 4 : 8));
  return NumericVector::create(_["program"] = program, _["rows"] = rows, _["stages"] = stages);
}

// [[Rcpp::export]]
bool ls_pointer_is_null(SEXP x) {
  return TYPEOF(x) != EXTPTRSXP || R_ExternalPtrAddr(x) == nullptr;
}

// [[Rcpp::export]]
List ls_engine_log_density(SEXP engine, NumericMatrix state, bool gradient, List options) {
  Engine* e = checked_pointer<Engine>(engine, "engine");
  const long C = state.nrow(), D = state.ncol();
  if (D != e->program->n_free)
    stop("the state has %d columns but the model has %d free parameters", (int)D,
         (int)e->program->n_free);
  auto& ex = e->executor(C, exec_options(options));
  chain_major_into(state, e->state_buffer);
  std::vector<double> lp(C);
  std::vector<double>& grad = e->grad_buffer;
  if (gradient) grad.resize(C * D);
  ex.log_density(e->state_buffer.data(), lp.data(), gradient ? grad.data() : nullptr);
  NumericMatrix g = gradient ? NumericMatrix(Rcpp::no_init(C, D)) : NumericMatrix(0, 0);
  if (gradient)  // in g's order (column-major), each of its pages written once
    for (long i = 0; i < D; ++i)
      for (long c = 0; c < C; ++c) g(c, i) = grad[c * D + i];
  return List::create(_["log_density"] = NumericVector(lp.begin(), lp.end()), _["gradient"] = g);
}

// Values of the given nodes (0-based ids) for each row of `state`: a matrix with
// one row per state row and the nodes' elements (column-major) side by side.
// [[Rcpp::export]]
NumericMatrix ls_engine_values(SEXP engine, NumericMatrix state, IntegerVector nodes,
                               List options) {
  Engine* e = checked_pointer<Engine>(engine, "engine");
  const long C = state.nrow(), D = state.ncol();
  if (D != e->program->n_free) stop("the state does not match the model's free parameters");
  const std::vector<int> ids = as<std::vector<int>>(nodes);
  NumericMatrix out(C, traced_width(*e->program, ids));
  if (C == 0) return out;
  Tracer& t = e->tracer(C, exec_options(options), ids);
  t.values(chain_major(state).data(), C, out.begin(), 1, C);
  return out;
}

// A sampler of the given kind ("hmc", "nuts", "chees", "rwmh" or "slice") over
// the engine's program, with its settings in `parameters` (R/samplers.R):
// converted to a SamplerSpec, whose rules (the metric, chain groups) are the
// core's (sampler/sampler_factory.hpp).
// [[Rcpp::export]]
SEXP ls_sampler_new(SEXP engine, NumericMatrix init, std::string kind, List parameters,
                    double key0, double key1, List options) {
  Engine* e = checked_pointer<Engine>(engine, "engine");
  auto has = [&](const char* name) {
    return parameters.containsElementNamed(name) && !Rf_isNull(parameters[name]);
  };
  lockstep::SamplerSpec spec;
  spec.kind = kind;
  if (has("metric")) spec.metric = as<std::string>(parameters["metric"]);
  if (has("metric_factor")) {
    spec.metric_factor = as<std::vector<double>>(parameters["metric_factor"]);
    // a factor over the global parameters alone names them (1-based)
    const RObject covered = RObject(parameters["metric_factor"]).attr("coordinates");
    if (!covered.isNULL())
      for (double k : as<std::vector<double>>(covered)) spec.metric_coordinates.push_back(static_cast<long>(k) - 1);
  }
  spec.epsilon = as<double>(parameters["epsilon"]);
  // each chain's tuned step size, restarting a run (restart_sampler())
  if (has("step_sizes")) spec.step_sizes = as<std::vector<double>>(parameters["step_sizes"]);
  // (a sampler object from before adapt_step_size has none: shared, as then)
  spec.per_chain_step_size = has("adapt_step_size") &&
                             as<std::string>(parameters["adapt_step_size"]) == "per_chain";
  spec.warmup_rescue = !has("warmup_rescue") || as<bool>(parameters["warmup_rescue"]);
  // diag_sd: one value, one per free parameter, or (restarting a run whose
  // warmup adapted a metric per chain) a chains x dim matrix, one row per chain
  SEXP sd_arg = parameters["diag_sd"];
  spec.diag_sd = Rf_isMatrix(sd_arg) ? chain_major(NumericMatrix(sd_arg))
                                     : as<std::vector<double>>(sd_arg);
  // (a sampler object from before these options has neither)
  spec.diag_sd_from_gradient = has("diag_sd_from_gradient") &&
                               as<bool>(parameters["diag_sd_from_gradient"]);
  spec.per_chain_metric = has("adapt_metric") &&
                          as<std::string>(parameters["adapt_metric"]) == "per_chain";
  if (kind == "hmc") {
    spec.hmc.Lmin = as<int>(parameters["Lmin"]);
    spec.hmc.Lmax = as<int>(parameters["Lmax"]);
  } else if (kind == "nuts") {
    spec.nuts.max_treedepth = as<int>(parameters["max_treedepth"]);
    spec.nuts.adapt_delta = as<double>(parameters["adapt_delta"]);
    // (a sampler object from before this option has none: NUTS's leaves)
    if (has("max_energy_error"))
      spec.nuts.max_energy_error = as<double>(parameters["max_energy_error"]);
  } else if (kind == "chees") {
    spec.chees.max_leapfrog = as<int>(parameters["max_leapfrog"]);
  } else if (kind == "rwmh") {
    spec.rwmh.uniform = as<std::string>(parameters["proposal"]) == "uniform";
  } else if (kind == "slice") {
    spec.slice.max_doublings = as<int>(parameters["max_doublings"]);
  }
  auto h = std::make_unique<SamplerHandle>();
  h->program = e->program;
  h->rows = e->rows;
  h->options = exec_options(options);
  h->options.row_store = h->rows.get();
  h->across_processes = h->options.world != nullptr;
  h->bundle = lockstep::make_sampler(*h->program, spec, chain_major(init), init.nrow(),
                                     h->options, e->single, static_cast<uint32_t>(key0),
                                     static_cast<uint32_t>(key1));
  XPtr<SamplerHandle> ptr(h.release(), false);
  R_RegisterCFinalizerEx(ptr, finalize<SamplerHandle>, TRUE);
  ptr.attr("class") = "lockstep_sampler";
  // 1: every chain in lockstep; more: NUTS's or HMC's chain groups, one per thread
  ptr.attr("chain_groups") = static_cast<double>(ptr->bundle.chain_groups);
  // across processes, the groups (1-based, first and last) whose local
  // parameters this rank owns when the ranks shard by groups (owned_shard.hpp)
  if (const lockstep::GroupSlice* slice = ptr->bundle.slice.get())
    ptr.attr("owned_groups") = NumericVector::create(static_cast<double>(slice->first_group + 1),
                                                     static_cast<double>(slice->end_group));
  // in one process, the devices that own their groups (device_shards.hpp):
  // each one's groups (1-based, first and last), a row per device
  if (auto* shards = dynamic_cast<lockstep::DeviceShardsTarget*>(ptr->bundle.executor.get())) {
    NumericMatrix owned(shards->shards(), 2);
    for (int s = 0; s < shards->shards(); ++s) {
      owned(s, 0) = static_cast<double>(shards->slice(s).first_group + 1);
      owned(s, 1) = static_cast<double>(shards->slice(s).end_group);
    }
    ptr.attr("device_groups") = owned;
  }
  if (const lockstep::GroupSlice* slice = ptr->bundle.slice.get())  // (collective)
    ptr->whole = std::make_unique<lockstep::WholeState>(*slice, ptr->program->n_free,
                                                        *ptr->options.world);
  return ptr;
}

// What the devices of a sampler's target have sent one another since it was
// made (Target::exchanged()): c(calls, bytes), zeros on one device. For
// tests and benchmarks (across MPI processes: mpi_stats()).
// [[Rcpp::export]]
NumericVector ls_sampler_exchanged(SEXP sampler) {
  SamplerHandle* h = checked_pointer<SamplerHandle>(sampler, "sampler");
  const lockstep::CommunicatorStats s = h->bundle.executor->exchanged();
  return NumericVector::create(_["calls"] = static_cast<double>(s.calls),
                               _["bytes"] = static_cast<double>(s.bytes));
}

// [[Rcpp::export]]
void ls_sampler_begin_warmup(SEXP sampler, int n) {
  checked_pointer<SamplerHandle>(sampler, "sampler")->bundle.sampler->begin_warmup(n);
}

// The sampler's state between iterations (Sampler::save_state()), a named
// list of numeric vectors for a checkpoint (R/checkpoint.R); across ranks
// that own their groups, this rank's part.
// [[Rcpp::export]]
List ls_sampler_state(SEXP sampler) {
  return saved_state_to_list(checked_pointer<SamplerHandle>(sampler, "sampler")->bundle.sampler->save_state());
}

// Restores a state from ls_sampler_state() into a sampler made with the same
// settings, seeds and chains (Sampler::restore_state(), which refuses one of
// another shape, naming what differs).
// [[Rcpp::export]]
void ls_sampler_restore(SEXP sampler, List state) {
  checked_pointer<SamplerHandle>(sampler, "sampler")->bundle.sampler->restore_state(
      saved_state_from_list(state));
}

// Whether the user has interrupted (Esc, Ctrl-C, RStudio's stop button), as
// R's signal handler notes it. mcmc() runs ls_sampler_run() with interrupts
// suspended, so that no draw made is lost; R_CheckUserInterrupt() then
// reports nothing, but the flag is set all the same. Reading it costs
// nothing, so the sampler asks at every leapfrog step. (Windows' GUI break
// reaches the flag only through R's event loop, after the chunk.)
// R_interrupts_pending is declared by R_ext/GraphicsDevice.h, which Rcpp.h
// includes.
bool interrupt_pending() { return R_interrupts_pending != 0; }

// Runs n iterations; keeps every thin-th state (counted from `offset`, the
// number of iterations of this phase already run). Returns the values of the
// nodes `traced` (0-based ids) at each kept state as rows (iteration-major,
// chains within; the nodes' elements side by side, as ls_engine_values()
// gives them), the kept free states themselves when `keep_free` (else only
// the last kept one, a row per chain, from which a run can be continued: the
// free states of a model with millions of parameters would take gigabytes a
// draw), each kept iteration's diagnostics per chain (the same row order),
// the sampler's tallies, and the iterations made: fewer than n when the user
// interrupted, in which case the iteration under way ended at its next
// leapfrog step (its trajectory cut short, a valid draw:
// Sampler::set_cut_check()). `interrupted` is then TRUE and the
// interrupt is taken off R's flag: mcmc() signals it itself, in R, where it
// keeps the draws, and R does not see it again.
// Across ranks that own their groups, ranks other than 0 return the values
// of only those traced nodes that read no local parameter, and only the last
// free state: `traced` (the nodes whose values are returned) and `free_kept`
// (whether `free` holds every kept state) say what came back. There the last
// kept state and the tuned diag_sd are whole model vectors, which every rank
// holds only in part: they are made whole on every rank (a gather and a
// broadcast of chains x the model's free parameters) only when `whole` is
// TRUE, which mcmc() asks for in the calls after which it needs them (the
// run's last, and those before a checkpoint), so that the other calls
// exchange only what the gradients do. Otherwise, across ranks, `free` has
// no rows unless it holds every kept state (rank 0 with `keep_free`), and
// `diag_sd` is NULL; `whole` in the result says which. (Within one process
// nothing needs gathering, and both always come back.)
// [[Rcpp::export]]
List ls_sampler_run(SEXP sampler, int n, bool warmup, int thin, int offset, IntegerVector traced,
                    bool keep_free, bool whole) {
  SamplerHandle* h = checked_pointer<SamplerHandle>(sampler, "sampler");
  lockstep::Sampler& smp = *h->bundle.sampler;
  const bool may_stop = !h->across_processes;
  struct CutCheck {  // the check is this call's alone, also when it throws
    lockstep::Sampler& s;
    CutCheck(lockstep::Sampler& smp, bool on) : s(smp) {
      s.set_cut_check(on ? interrupt_pending : nullptr);
    }
    ~CutCheck() { s.set_cut_check(nullptr); }
  } cut_check(smp, may_stop);
  auto stop_now = [may_stop] { return may_stop && interrupt_pending(); };
  int made = 0;
  // D: the model's free parameters; a rank that owns its groups samples only
  // its part of them (SamplerBundle::slice), made whole where R needs them
  const long C = h->bundle.executor->chains(), D = h->program->n_free;
  const lockstep::GroupSlice* slice = h->bundle.slice.get();
  const std::vector<int> asked = as<std::vector<int>>(traced);
  traced_width(*h->program, asked);  // (checks the ids)
  // Whether each kept draw must be made whole: when the free states are kept
  // or a traced value reads a local parameter. Then each rank sends its own
  // coordinates to rank 0 (WholeState::to_root), and only rank 0 keeps the
  // free states and traces the values that read locals; the other ranks
  // trace the values that read only the globals, which every rank holds. The
  // last kept state, from which a run continues, is made whole on every rank
  // once per call. (The same on every rank: every call is collective.)
  const bool root = !slice || h->options.world->rank() == 0;
  bool reads_locals = false;  // whether any traced value reads a local parameter
  std::vector<int> nodes;     // the values this rank traces
  for (int id : asked) {
    const bool local = slice && lockstep::depends_on_any(*h->program, {id}, slice->locals);
    reads_locals = reads_locals || local;
    if (root || !local) nodes.push_back(id);
  }
  const bool whole_each = slice && (keep_free || reads_locals);
  const long width = traced_width(*h->program, nodes);
  const bool keep_all_free = keep_free && root;
  std::vector<double> slice_x(slice ? C * h->bundle.executor->dim() : 0);
  auto to_model = [&](const double* x, double* out) {
    if (!slice) return smp.to_model(x, out, C);
    smp.to_model(x, slice_x.data(), C);
    const long Dr = h->bundle.executor->dim();
    for (long c = 0; c < C; ++c)
      for (long j = 0; j < slice->n_global; ++j) out[c * D + slice->full_index[j]] = slice_x[c * Dr + j];
    if (whole_each) h->whole->to_root(slice_x.data(), C, out);  // (rank 0's out made whole)
  };
  Tracer* tracer = nodes.empty() ? nullptr : &h->tracer_of(nodes);
  long n_kept = 0;
  std::vector<std::vector<double>> kept;  // the kept states, with keep_free
  std::vector<double> model_x(C * D);     // the last kept state, in the model's coordinates
  std::vector<double> values;             // [kept draw][chain][width]
  std::vector<double> accept_stat, energy, step_size;
  std::vector<int> n_leapfrog, tree_depth, divergent;
  int divergent_all = 0, max_depth_all = 0;
  // iteration `it`'s draw x [C, D] and statistics (each [C]) into the tallies
  // and, when kept, the output
  auto record = [&](int it, const double* x, const double* accept, const double* en,
                    const int* leapfrogs, const int* depth, const int* div) {
    for (long c = 0; c < C; ++c) {
      divergent_all += div[c];
      max_depth_all = std::max(max_depth_all, depth[c]);
    }
    if ((offset + it + 1) % thin != 0) return;
    ++n_kept;
    to_model(x, model_x.data());  // a dense metric's coordinates are not the model's
    if (tracer) {
      values.resize(n_kept * C * width);
      tracer->values(model_x.data(), C, values.data() + (n_kept - 1) * C * width, width, 1);
    }
    if (keep_all_free) kept.push_back(model_x);
    const std::vector<double> eps = smp.step_sizes();
    for (long c = 0; c < C; ++c) {
      accept_stat.push_back(accept[c]);
      energy.push_back(en[c]);
      step_size.push_back(eps[c]);
      n_leapfrog.push_back(leapfrogs[c]);
      tree_depth.push_back(depth[c]);
      divergent.push_back(div[c]);
    }
  };
  if (!warmup && smp.steps_apart()) {
    // NUTS in chain groups: each group makes the iterations on its own, in
    // batches of at most about 8 MB of draws
    const long batch = std::max(1L, (1L << 20) / std::max(1L, C * D));
    lockstep::IterationRecord r;
    for (int it0 = 0; it0 < n; it0 += static_cast<int>(batch)) {
      if (stop_now()) break;  // (the groups' threads do not ask)
      const long m = std::min<long>(batch, n - it0);
      smp.iterate_apart(m, r);
      made += static_cast<int>(m);
      for (long k = 0; k < m; ++k)
        record(it0 + static_cast<int>(k), r.x.data() + k * C * D, r.accept_stat.data() + k * C,
               r.energy.data() + k * C, r.n_leapfrog.data() + k * C, r.tree_depth.data() + k * C,
               r.divergent.data() + k * C);
    }
  } else {
    for (int it = 0; it < n; ++it) {
      smp.iterate(warmup);
      const lockstep::IterationStats& st = smp.last();
      record(it, smp.state().data(), st.accept_stat.data(), st.energy.data(),
             st.n_leapfrog.data(), st.tree_depth.data(), st.divergent.data());
      ++made;
      if (stop_now()) break;
    }
  }
  // The last kept state whole on every rank, when asked (every rank kept the
  // same iterations and was asked the same: collective): rank 0's, where
  // each kept draw was already made whole there, else gathered now.
  const bool made_whole = !slice || whole;
  if (slice && whole && n_kept > 0) {
    if (whole_each)
      h->options.world->broadcast_bytes(model_x.data(), C * D * static_cast<long>(sizeof(double)));
    else
      h->whole->to_all(slice_x.data(), C, model_x.data());
  }
  // free: every kept state, or the last one (none, across ranks not asked
  // to make it whole)
  const long free_draws = keep_all_free ? n_kept : made_whole ? std::min(n_kept, 1L) : 0;
  // (column by column: R's matrix is column-major, and a column is every
  // kept draw's value of one coordinate, so the writes are contiguous; row by
  // row they jumped a whole column's length each, which cost half a second a
  // draw of 2.1 million coordinates)
  NumericMatrix free(static_cast<int>(free_draws * C), static_cast<int>(D));
  std::vector<const double*> rows(free_draws * C);
  for (long k = 0; k < free_draws; ++k)
    for (long c = 0; c < C; ++c) rows[k * C + c] = (keep_all_free ? kept[k] : model_x).data() + c * D;
  double* out = free.begin();
  const long n_rows = free_draws * C;
  for (long i = 0; i < D; ++i)
    for (long r = 0; r < n_rows; ++r) out[i * n_rows + r] = rows[r][i];
  NumericMatrix traced_values(static_cast<int>(n_kept * C), static_cast<int>(width));
  for (long col = 0; col < width; ++col)
    for (long row = 0; row < n_kept * C; ++row)
      traced_values(static_cast<int>(row), static_cast<int>(col)) = values[row * width + col];
  const auto& acc = smp.accepted();
  const auto& bad = smp.bad();
  // The tuned diag_sd: one per free parameter when pooled (every chain's row
  // is the same), a chains x dim matrix when adapted per chain. With a dense
  // metric (the sampler's own diag_sd is then 1), the metric's standard
  // deviations, sqrt(diag(L L')) of each chain's factor.
  const lockstep::DenseMetric* dm = smp.dense_metric();
  std::vector<double> sd = dm ? dm->model_sd() : smp.diag_sd();
  if (slice && whole) {
    std::vector<double> whole_sd(C * D);
    h->whole->to_all(sd.data(), C, whole_sd.data());
    sd.swap(whole_sd);
  }
  RObject diag_sd;  // protected until the list holds it (NULL: not made whole)
  if (!made_whole) {
  } else if (smp.per_chain_metric()) {
    NumericMatrix m(static_cast<int>(C), static_cast<int>(D));
    for (long c = 0; c < C; ++c)
      for (long i = 0; i < D; ++i) m(c, i) = sd[c * D + i];
    diag_sd = m;
  } else {
    diag_sd = NumericVector(sd.begin(), sd.begin() + D);
  }
  // A dense metric's factor, as an array [g, g, k] whose slice k is the
  // transpose of chain k's lower factor (one slice when pooled): read back
  // in order, it is the row-major factor DenseMetric takes. Over the global
  // parameters alone, its attribute "coordinates" names them (1-based, in
  // the whole model's free state: a rank's slice keeps them first).
  RObject metric_factor;
  if (dm) {
    const long k = smp.per_chain_metric() ? C : 1;
    const long g = static_cast<long>(dm->dense_coordinates().size());
    NumericVector f(dm->factor().begin(), dm->factor().begin() + k * g * g);
    f.attr("dim") = IntegerVector::create(static_cast<int>(g), static_cast<int>(g),
                                          static_cast<int>(k));
    if (!dm->covers_all() || g != D) {
      IntegerVector covered(g);
      for (long j = 0; j < g; ++j) {
        const long i = dm->dense_coordinates()[j];
        covered[j] = static_cast<int>((slice ? slice->full_index[i] : i) + 1);
      }
      f.attr("coordinates") = covered;
    }
    metric_factor = f;
  }
  const bool interrupted = made < n || stop_now();
  if (interrupted) R_interrupts_pending = 0;
  // the chains warmup moved so far (1-based; moved_to NA: none was healthy)
  const std::vector<lockstep::WarmupRescue>& moved = smp.rescues();
  IntegerVector rescue_iteration(moved.size()), rescue_chain(moved.size()),
      rescue_to(moved.size());
  NumericVector rescue_accept(moved.size()), rescue_lag(moved.size());
  for (size_t k = 0; k < moved.size(); ++k) {
    rescue_iteration[k] = static_cast<int>(moved[k].iteration);
    rescue_chain[k] = static_cast<int>(moved[k].chain + 1);
    rescue_to[k] = moved[k].from < 0 ? NA_INTEGER : static_cast<int>(moved[k].from + 1);
    rescue_accept[k] = moved[k].accept;
    rescue_lag[k] = moved[k].lag;
  }
  List rescues = data_frame(
      List::create(_["iteration"] = rescue_iteration, _["chain"] = rescue_chain,
                   _["moved_to"] = rescue_to, _["accept"] = rescue_accept, _["lag"] = rescue_lag),
      static_cast<long>(moved.size()));
  List diagnostics = data_frame(
      List::create(_["accept_stat__"] = accept_stat, _["stepsize__"] = step_size,
                   _["treedepth__"] = tree_depth, _["n_leapfrog__"] = n_leapfrog,
                   _["divergent__"] = divergent, _["energy__"] = energy),
      accept_stat.size());
  return List::create(_["values"] = traced_values, _["free"] = free,
                      _["diagnostics"] = diagnostics,
                      _["accepted"] = NumericVector(acc.begin(), acc.end()),
                      _["bad"] = NumericVector(bad.begin(), bad.end()),
                      _["max_treedepth"] = max_depth_all,
                      _["epsilon"] = smp.step_sizes(),
                      _["diag_sd"] = diag_sd,
                      _["metric_factor"] = metric_factor,
                      _["lag_at_warmup_end"] = NumericVector(smp.lag_at_warmup_end().begin(),
                                                             smp.lag_at_warmup_end().end()),
                      _["rescues"] = rescues,
                      _["iterations"] = made, _["interrupted"] = interrupted,
                      _["traced"] = IntegerVector(nodes.begin(), nodes.end()),
                      _["free_kept"] = keep_all_free, _["whole"] = made_whole);
}

// Seconds per log density + gradient evaluation of all chains at `state`,
// timed inside the engine over `reps` calls (after one warm-up call): what a
// sampler's leapfrog step costs, without the copies to and from R that
// ls_engine_log_density makes. For benchmarks (bench/).
// [[Rcpp::export]]
double ls_engine_time(SEXP engine, NumericMatrix state, List options, int reps) {
  Engine* e = checked_pointer<Engine>(engine, "engine");
  const long C = state.nrow(), D = state.ncol();
  if (D != e->program->n_free) stop("the state does not match the model's free parameters");
  if (reps < 1) stop("reps must be at least 1");
  auto& ex = e->executor(C, exec_options(options));
  std::vector<double> x = chain_major(state), lp(C), grad(C * D);
  ex.log_density(x.data(), lp.data(), grad.data());
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) ex.log_density(x.data(), lp.data(), grad.data());
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  return dt.count() / reps;
}

namespace {
void check_interrupt(void*) { R_CheckUserInterrupt(); }
// Whether the user asked to stop (Esc, Ctrl-C), without unwinding through C++.
bool user_interrupted() { return R_ToplevelExec(check_interrupt, nullptr) == FALSE; }
bool was_interrupted = false;
bool note_interrupt() { return was_interrupted = was_interrupted || user_interrupted(); }
}  // namespace

// Maximises the log density from each row of `init` (one start per row, all
// in lockstep) with the optimiser `method` and its `parameters`; what the
// target's devices exchanged comes back too (for tests).
// [[Rcpp::export]]
List ls_optimise(SEXP engine, NumericMatrix init, std::string method, List parameters,
                 double max_iterations, double tolerance, List options) {
  Engine* e = checked_pointer<Engine>(engine, "engine");
  const long C = init.nrow(), D = init.ncol();
  if (D != e->program->n_free) stop("the initial values do not match the model's free parameters");
  const lockstep::ExecOptions o = exec_options(options);
  // Across processes whose rows are whole groups, the first-order methods
  // (elementwise updates) and L-BFGS (its sums and sup norms made whole over
  // the ranks) run on each rank's slice of the state, as the samplers do
  // (owned_shard.hpp); Nelder-Mead, whose simplex has a vertex per
  // coordinate of the whole state, keeps it whole on every rank.
  const bool shardable = method != "nelder_mead";
  std::unique_ptr<lockstep::GroupSlice> slice;
  std::unique_ptr<lockstep::Target> owned;
  if (o.world && shardable) slice = lockstep::plan_owned_shards(*e->program, *o.world);  // (collective)
  if (slice) owned = lockstep::make_owned_shard_target(*slice, C, o, e->single, D);
  // on the devices of one process, devices that own their groups evaluate
  // their slices of the (host) state, as the samplers' do (device_shards.hpp)
  if (!owned && lockstep::runs_on_device_shards(o))
    owned = lockstep::make_device_shards(*e->program, C, o, e->single);
  lockstep::Target& ex = owned ? *owned : e->executor(C, o);
  lockstep::OptimiserSettings s;
  s.method = method;
  const CharacterVector names = parameters.names();
  for (R_xlen_t k = 0; k < parameters.size(); ++k)
    s.params[as<std::string>(names[k])] = as<double>(parameters[k]);
  s.max_iterations = static_cast<long>(max_iterations);
  s.tolerance = tolerance;
  was_interrupted = false;
  const std::vector<double> start = chain_major(init);
  lockstep::OptimiserResult r = lockstep::optimise(
      ex, s, slice ? slice->of_whole(start.data(), C, D) : start, note_interrupt);
  if (slice) {  // the ranks' parts made whole on every rank (collective)
    std::vector<double> whole(C * D);
    lockstep::WholeState(*slice, D, *o.world).to_all(r.par.data(), C, whole.data());
    r.par.swap(whole);
  }
  NumericMatrix par(static_cast<int>(C), static_cast<int>(D));
  for (long c = 0; c < C; ++c)
    for (long i = 0; i < D; ++i) par(c, i) = r.par[c * D + i];
  return List::create(_["par"] = par, _["value"] = NumericVector(r.value.begin(), r.value.end()),
                      _["iterations"] = NumericVector(r.iterations.begin(), r.iterations.end()),
                      _["convergence"] = IntegerVector(r.convergence.begin(), r.convergence.end()),
                      _["interrupted"] = was_interrupted,
                      // what the target's devices sent one another (calls, bytes)
                      _["exchanged"] = NumericVector::create(
                          static_cast<double>(ex.exchanged().calls),
                          static_cast<double>(ex.exchanged().bytes)));
}
