// A data node's values borrowed from memory another owner keeps (ir.hpp's
// DataValues: R's vectors of the user's data, issue 50): every copy of the
// program reads the owner's memory, a write copies first and leaves the
// owner's values as they were, the owner is kept alive while any copy
// borrows, and a program of borrowed data computes what one of its own does,
// its stages reading the borrowed array itself where the rows are in order.
#include <catch2/catch.hpp>

#include <memory>
#include <random>
#include <vector>

#include "helpers.hpp"
#include "models.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/planner.hpp"
#include "lockstep/row_order.hpp"

using namespace lstest;
using lockstep::DataValues;
using lockstep::ExecOptions;
using lockstep::Executor;

TEST_CASE("data values: borrowed, shared by copies, copied on write", "[ir][data_values]") {
  auto owner = std::make_shared<std::vector<double>>(std::vector<double>{1, 2, 3, 4});
  DataValues v = DataValues::borrow(owner->data(), owner->size(), owner);
  CHECK(v.borrowed());
  CHECK(v.size() == 4);
  CHECK(v.data() == owner->data());
  CHECK(v[2] == 3);
  CHECK(owner.use_count() == 2);
  DataValues copy = v;  // a copy of the node: the same memory, kept alive
  CHECK(copy.data() == owner->data());
  CHECK(owner.use_count() == 3);
  double* w = copy.mutable_data();  // a write copies first
  w[0] = 10;
  CHECK_FALSE(copy.borrowed());
  CHECK(copy.data() != owner->data());
  CHECK((*owner)[0] == 1);
  CHECK(copy[0] == 10);
  CHECK(copy[3] == 4);
  CHECK(owner.use_count() == 2);
  v.release();
  CHECK(v.empty());
  CHECK(owner.use_count() == 1);
  // values of its own, from a vector or a list
  DataValues own = std::vector<double>{5, 6};
  CHECK_FALSE(own.borrowed());
  CHECK(own.size() == 2);
  own = {7, 8, 9};
  CHECK(own.size() == 3);
  CHECK(own[1] == 8);
  // cut by rows, as shards and group slices cut data: the rows' values
  const std::vector<double> cut = lockstep::cut_rows(DataValues::borrow(owner->data(), 4, owner), 2, 1, 2);
  CHECK(cut == std::vector<double>{2, 4});
}

TEST_CASE("data values: a program of borrowed data computes what one of its own does",
          "[ir][data_values][stages]") {
  std::mt19937 rng(53);
  for (bool panel : {true, false}) {
    Demand d = demand(900, 150, 4, rng, panel);
    lockstep::plan(d.p);
    // the same program, its data borrowed from vectors held elsewhere
    Program borrowed = d.p;
    std::vector<std::shared_ptr<std::vector<double>>> owners;
    std::vector<int> data;
    for (size_t id = 0; id < borrowed.nodes.size(); ++id) {
      lockstep::Node& n = borrowed.nodes[id];
      if (n.op != Op::data) continue;
      owners.push_back(std::make_shared<std::vector<double>>(n.values.begin(), n.values.end()));
      n.values = DataValues::borrow(owners.back()->data(), owners.back()->size(), owners.back());
      if (n.extent == 0) data.push_back(static_cast<int>(id));
    }
    REQUIRE(data.size() == 2);
    for (long chains : {1L, 3L}) {
      INFO("panel " << panel << " chains " << chains);
      std::vector<double> state = random_state(rng, chains, d.p.n_free);
      for (double& v : state) v *= 0.5;
      for (Backend backend : {Backend::cpu, Backend::emulated}) {
        ExecOptions o;
        o.backend = backend;
        o.tile_rows = 16;
        check_same(run(borrowed, chains, state, o), run(d.p, chains, state, o));
      }
      // where the rows are in order, the stage reads the borrowed array itself
      Executor<double> e(borrowed, chains, ExecOptions{});
      for (int id : data)
        CHECK((e.stage(0).row_data(id).data() == borrowed.nodes[id].values.data()) == panel);
      // rows reordered by group: the reordered copy is the program's own, and
      // the owner's values are as they were
      const Program ordered = lockstep::with_rows_ordered(borrowed);
      for (int id : data) {
        CHECK_FALSE(ordered.nodes[id].values.borrowed());
        CHECK(borrowed.nodes[id].values.borrowed());
        const std::vector<double> original(d.p.nodes[id].values.begin(), d.p.nodes[id].values.end());
        const std::vector<double> now(borrowed.nodes[id].values.begin(), borrowed.nodes[id].values.end());
        CHECK(now == original);
      }
    }
  }
}
