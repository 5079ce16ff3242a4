"""Seed 003's NumPyro SVI on the demand model, on one GPU: milliseconds per iteration,
the peer of bench/svi_demand.R --gpu 1 on the same rows (bench/svi_demand_gpu.sh runs
both and prints the ratio).

    python3 bench/svi_demand_numpyro.py DATA [--iterations 300] [--platform gpu]

DATA is the file `Rscript bench/svi_demand.R --export DATA` writes (sim_demand()'s rows).
The model is the seed's `model(data_dict, outcome, parallel=False)`: LocScaleReparam on
every level (the non-centred priors bench/svi_demand.R writes by hand), an AutoNormal
guide initialised at the priors' medians, RenyiELBO(num_particles=4) (alpha = 0, the
importance-weighted bound) and optax.adamw with the seed's exponential decay. Like the
seed's clip (log demand in [-4, 20]) it is kept, so the two models differ there alone.

Two timings, each the difference of n and 2n iterations over n, so that compiling does
not count:
  loop     a Python loop over jax.jit(svi.update), as svi.run() with its progress bar
           (the seed's figures) runs: one dispatch per iteration;
  fori     the iterations in one jax.lax.fori_loop, compiled whole: no dispatch at all.
"""
import argparse
import time

import numpy as np
import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
import optax
from numpyro.infer import SVI, RenyiELBO, autoguide, init_to_median
from numpyro.infer.reparam import LocScaleReparam


def read_data(path):
    with open(path, "rb") as f:
        n_obs, n_product, n_cat, n_time_cat = (int(v) for v in np.fromfile(f, np.float64, 4))
        product = np.fromfile(f, np.int32, n_obs)
        time_cat = np.fromfile(f, np.int32, n_obs)
        category = np.fromfile(f, np.int32, n_product)
        log_price = np.fromfile(f, np.float64, n_obs)
        units = np.fromfile(f, np.int32, n_obs)
    data = dict(n_obs=n_obs, n_product=n_product, n_cat=n_cat, n_time_cat=n_time_cat,
                product_to_category=jnp.asarray(category), product_idx=jnp.asarray(product),
                log_price=jnp.asarray(log_price, dtype=jnp.float32),
                time_cat_idx=jnp.asarray(time_cat))
    return data, jnp.asarray(units, dtype=jnp.float32)


def model(data_dict, outcome=None):
    # the seed's model with parallel=False (one device)
    product_to_category = data_dict["product_to_category"]
    product_idx = data_dict["product_idx"]
    log_price = data_dict["log_price"]
    time_cat_idx = data_dict["time_cat_idx"]
    category_plate = numpyro.plate("category", data_dict["n_cat"])
    time_cat_plate = numpyro.plate("time_cat", data_dict["n_time_cat"])
    product_plate = numpyro.plate("product", data_dict["n_product"])
    data_plate = numpyro.plate("data", size=data_dict["n_obs"])
    global_a = numpyro.sample("global_a", dist.Normal(-2, 1), infer={"reparam": LocScaleReparam()})
    with category_plate:
        category_a = numpyro.sample("category_a", dist.Normal(global_a, 1),
                                    infer={"reparam": LocScaleReparam()})
    with product_plate:
        product_a = numpyro.sample("product_a", dist.Normal(category_a[product_to_category], 2),
                                   infer={"reparam": LocScaleReparam()})
        product_effect = numpyro.sample("product_effect", dist.Normal(0, 3),
                                        infer={"reparam": LocScaleReparam()})
    with time_cat_plate:
        time_cat_effects = numpyro.sample("time_cat_effects", dist.Normal(0, 3),
                                          infer={"reparam": LocScaleReparam()})
    log_demand = (product_a[product_idx] * log_price + time_cat_effects[time_cat_idx]
                  + product_effect[product_idx])
    demand = jnp.exp(jnp.clip(log_demand, -4, 20))
    with data_plate as ind:
        numpyro.sample("obs", dist.Poisson(demand[ind]), obs=outcome)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--platform", default="gpu")
    args = parser.parse_args()
    numpyro.set_platform(args.platform)
    data, outcome = read_data(args.data)
    print(f"NumPyro {numpyro.__version__}, JAX {jax.__version__}, {jax.devices()[0]}; "
          f"{data['n_obs']} rows, {data['n_product']} products")
    guide = autoguide.AutoNormal(model, init_loc_fn=init_to_median)
    schedule = optax.exponential_decay(init_value=0.01, transition_steps=1000, decay_rate=0.99,
                                       staircase=False, end_value=1e-5)
    svi = SVI(model, guide, optax.adamw(learning_rate=schedule), loss=RenyiELBO(num_particles=4))
    state = svi.init(jax.random.PRNGKey(42), data, outcome)
    n_free = sum(int(np.prod(v.shape)) for v in svi.get_params(state).values()) // 2
    update = jax.jit(lambda s: svi.update(s, data, outcome))

    def loop(s, n):
        for _ in range(n):
            s, loss = update(s)
        loss.block_until_ready()
        return s

    def fori(n):
        body = lambda i, s: svi.update(s, data, outcome)[0]
        return jax.jit(lambda s: jax.lax.fori_loop(0, n, body, s))

    n = args.iterations
    state = loop(state, 5)  # compiles
    timings = {}
    for name in ("loop", "fori"):
        seconds = []
        for k in (n, 2 * n):
            if name == "fori":
                run = fori(k)
                jax.block_until_ready(run(state))  # compiles
                t0 = time.perf_counter()
                jax.block_until_ready(run(state))
            else:
                t0 = time.perf_counter()
                loop(state, k)
            seconds.append(time.perf_counter() - t0)
        timings[name] = 1e3 * (seconds[1] - seconds[0]) / n
    print(f"numpyro, {n_free} free parameters: {timings['loop']:.2f} ms per iteration of 4 "
          f"particles (Python loop over jit(update)); {timings['fori']:.2f} ms (lax.fori_loop)")


if __name__ == "__main__":
    main()
