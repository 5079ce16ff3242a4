# The seed model's log density and gradient in JAX on the same GPU as
# bench/gpu_hlogit.cpp: the peer figure for the GPU path (the seed,
# ../shared/seeds/004, timed JAX through PyMC at 1.4 ms on an A100 for
# N = 10^6 in float32). The GPU machines lent to sessions have JAX but no R,
# so this peer is Python; lockstep itself never uses it.
#
# Same model as bench/hlogit_program.hpp: N rows, G = N / 10 groups, K = 20
# covariates, alpha ~ N(0, 1.5), beta ~ N(0, 1), sigma_alpha ~ N+(0, 1),
# sigma_gamma ~ N+(0, 0.5) (both on the log scale with their Jacobian),
# z_alpha, z_gamma ~ N(0, 1), eta = alpha + sigma_alpha z_alpha[g] +
# rowSums(X * (beta + sigma_gamma z_gamma[g, ])), y ~ Bernoulli(logit eta).
# Chains are vmapped, as lockstep steps them in lockstep.
#
#   python3 bench/jax_hlogit.py [--n 1e5,1e6,1e7] [--chains 1,4,16] [--reps 20]
# prints, per N, chains and precision, the median milliseconds of one jitted
# value-and-gradient call for all chains (inputs on the device, result waited
# for) and per chain-gradient.
import argparse
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="1e5,1e6,1e7")
    ap.add_argument("--chains", default="1,4,16")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()

    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    print(f"jax {jax.__version__}, devices {jax.devices()}")
    K = 20
    print(f"{'N':>9} {'chains':>6} {'prec':>6} {'ms/call':>9} {'ms/chain-grad':>14}")
    for n in [int(float(s)) for s in args.n.split(",")]:
        G = n // 10
        rng = np.random.default_rng(1)
        X = rng.normal(size=(n, K))
        g = rng.integers(0, G, size=n)
        eta = 0.3 + rng.normal(0, 0.8, G)[g] + X @ rng.normal(0, 0.45, K)
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(np.float64)
        dim = 1 + K + 1 + K + G + G * K
        for prec in ["double", "single"]:
            dt = jnp.float64 if prec == "double" else jnp.float32
            Xd, yd, gd = jnp.asarray(X, dt), jnp.asarray(y, dt), jnp.asarray(g, jnp.int32)

            def logp(theta):
                i = 0
                alpha = theta[i]; i += 1
                beta = theta[i:i + K]; i += K
                ls_a = theta[i]; i += 1
                ls_g = theta[i:i + K]; i += K
                z_a = theta[i:i + G]; i += G
                z_g = theta[i:i + G * K].reshape(G, K)
                s_a, s_g = jnp.exp(ls_a), jnp.exp(ls_g)
                lp = -0.5 * (alpha / 1.5) ** 2 - 0.5 * jnp.sum(beta ** 2)
                lp += -0.5 * s_a ** 2 + ls_a
                lp += jnp.sum(-0.5 * (s_g / 0.5) ** 2 + ls_g)
                lp += -0.5 * jnp.sum(z_a ** 2) - 0.5 * jnp.sum(z_g ** 2)
                coef = beta + s_g * z_g[gd]
                e = alpha + s_a * z_a[gd] + jnp.sum(Xd * coef, axis=1)
                lp += jnp.sum(yd * e - jnp.logaddexp(0.0, e))
                return lp

            vg = jax.jit(jax.vmap(jax.value_and_grad(logp)))
            for c in [int(s) for s in args.chains.split(",")]:
                theta = jnp.asarray(np.random.default_rng(2).normal(0, 0.1, (c, dim)), dt)
                jax.block_until_ready(vg(theta))
                times = []
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    jax.block_until_ready(vg(theta))
                    times.append(time.perf_counter() - t0)
                ms = 1e3 * float(np.median(times))
                print(f"{n:>9} {c:>6} {prec:>6} {ms:>9.3f} {ms / c:>14.3f}", flush=True)


if __name__ == "__main__":
    main()
