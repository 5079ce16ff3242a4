// One copy of a program's row data for all its executors (row_store.hpp):
// executors of other chain counts, threads, tiles and backends hold the same
// arrays, give what executors with copies of their own give, and, where the
// rows are in order already and the precision is double, hold the program's
// own arrays with no copy at all.
#include <catch2/catch.hpp>

#include <memory>
#include <random>
#include <vector>

#include "helpers.hpp"
#include "models.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/planner.hpp"
#include "lockstep/row_order.hpp"
#include "lockstep/row_store.hpp"

using namespace lstest;
using lockstep::ExecOptions;
using lockstep::Executor;
using lockstep::RowStore;

namespace {

// The extent's data nodes and gathers' ids.
std::vector<int> nodes_of(const Program& p, Op op) {
  std::vector<int> out;
  for (size_t id = 0; id < p.nodes.size(); ++id)
    if (p.nodes[id].op == op && p.nodes[id].extent == 0) out.push_back(static_cast<int>(id));
  return out;
}

}  // namespace

TEST_CASE("row store: a program's executors share one copy of its row data, or none",
          "[stages][row_store]") {
  std::mt19937 rng(50);
  for (bool panel : {true, false}) {
    // the panel's rows come by product (in order); the other's are random
    Demand d = demand(1800, 300, 5, rng, panel);
    lockstep::plan(d.p);
    const Program& p = d.p;
    REQUIRE(lockstep::rows_in_order(p, 0) == panel);
    const std::vector<int> data = nodes_of(p, Op::data), gathers = nodes_of(p, Op::gather);
    REQUIRE(data.size() == 2);  // log_price, units
    REQUIRE(gathers.size() == 3);
    RowStore store(p);
    for (long chains : {1L, 4L}) {
      INFO("panel " << panel << " chains " << chains);
      std::vector<double> state = random_state(rng, chains, p.n_free);
      for (double& v : state) v *= 0.5;
      ExecOptions plain;
      plain.observation_stage = false;
      const Result reference = run(p, chains, state, plain);
      ExecOptions a, b, c;
      a.row_store = b.row_store = c.row_store = &store;
      a.threads = 2;
      b.tile_rows = 7;
      c.backend = Backend::emulated;
      c.devices = 3;
      check_same(run(p, chains, state, a), reference);
      check_same(run(p, chains, state, b), reference);
      check_same(run(p, chains, state, c), reference);
      Executor<double> ea(p, chains, a), eb(p, chains, b), ec(p, chains, c);
      for (int id : data) {
        const double* at = ea.stage(0).row_data(id).data();
        CHECK(at == eb.stage(0).row_data(id).data());
        CHECK(at == ec.stage(0).row_data(id).data());
        // in order: the program's own values; else one copy in the store
        CHECK((at == p.nodes[id].values.data()) == panel);
        CHECK(store.held<double>(id, true) == !panel);
        // the executors keep no whole copy of row data
        CHECK(ea.value(id).empty());
      }
      for (int id : gathers) {
        const long* at = ea.stage(0).row_index(id).data();
        CHECK(at == eb.stage(0).row_index(id).data());
        CHECK((at == p.nodes[id].index.data()) == panel);
        CHECK(store.held<long>(id, true) == !panel);
      }
      // without the store, each its own copy (or the program's)
      Executor<double> alone(p, chains, ExecOptions{});
      for (int id : data)
        CHECK((alone.stage(0).row_data(id).data() == ea.stage(0).row_data(id).data()) == panel);
      // rows in the program's order (reorder_rows off): arrays of their own key
      ExecOptions unordered = a;
      unordered.reorder_rows = false;
      check_same(run(p, chains, state, unordered), reference);
      // single precision: one float copy for its executors
      ExecOptions f1 = a, f2 = b;
      Executor<float> x1(p, chains, f1), x2(p, chains, f2);
      for (int id : data) {
        CHECK(x1.stage(0).row_data(id).data() == x2.stage(0).row_data(id).data());
        CHECK(store.held<float>(id, true));
      }
      std::vector<double> lp(chains), g(chains * p.n_free);
      x2.log_density(state.data(), lp.data(), g.data());
      for (long k = 0; k < chains; ++k) CHECK(close(lp[k], reference.lp[k], 1e-5, 1e-3));
    }
    // the store keeps nothing once no executor holds it
    for (int id : data) {
      CHECK_FALSE(store.held<double>(id, true));
      CHECK_FALSE(store.held<float>(id, true));
    }
    // a store of another program (here a copy) is not used by this one's
    Program q = p;
    ExecOptions o;
    o.row_store = &store;
    std::vector<double> state = random_state(rng, 2, p.n_free);
    for (double& v : state) v *= 0.5;
    ExecOptions plain;
    plain.observation_stage = false;
    check_same(run(q, 2, state, o), run(p, 2, state, plain));
    Executor<double> eq(q, 2, o);
    for (int id : data) {
      CHECK_FALSE(store.held<double>(id, true));
      if (panel) CHECK(eq.stage(0).row_data(id).data() == q.nodes[id].values.data());
    }
  }
}
