/* Cost of the transcendental part of a logit-form Bernoulli log density, per 10^6 rows on
 * one core: log1p(exp(-|eta|)) (the log density) and 1 / (1 + exp(-eta)) (the gradient).
 * One chain-gradient of the seed model at N = 10^6 needs both once per row.
 * Build twice to compare scalar libm with the vectorised math GCC uses under -ffast-math
 * (glibc's libmvec):
 *   cc -O3 -march=native -fopenmp logistic_cost.c -o lc -lm && ./lc
 *   cc -O3 -march=native -ffast-math -fopenmp logistic_cost.c -o lcv -lm && ./lcv */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  const int n = 1000000, reps = 15;
  double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  float *xf = malloc(n * sizeof *xf), *yf = malloc(n * sizeof *yf);
  for (int i = 0; i < n; i++) { x[i] = (i % 2000) / 100.0 - 10; xf[i] = (float)x[i]; }
  double best[4] = {1e30, 1e30, 1e30, 1e30}, sink = 0;
  for (int r = 0; r < reps; r++) {
    double t[5];
    t[0] = omp_get_wtime();
    for (int i = 0; i < n; i++) y[i] = log1p(exp(-fabs(x[i])));
    t[1] = omp_get_wtime();
    for (int i = 0; i < n; i++) y[i] += 1.0 / (1.0 + exp(-x[i]));
    t[2] = omp_get_wtime();
    for (int i = 0; i < n; i++) yf[i] = log1pf(expf(-fabsf(xf[i])));
    t[3] = omp_get_wtime();
    for (int i = 0; i < n; i++) yf[i] += 1.0f / (1.0f + expf(-xf[i]));
    t[4] = omp_get_wtime();
    for (int k = 0; k < 4; k++) if (t[k + 1] - t[k] < best[k]) best[k] = t[k + 1] - t[k];
    for (int i = 0; i < n; i += 4096) sink += y[i] + yf[i];
  }
  printf("per 1e6 rows, one core, best of %d: double log1p(exp) %.2f ms, ilogit %.2f ms; "
         "float log1p(exp) %.2f ms, ilogit %.2f ms (%g)\n", reps, best[0] * 1e3, best[1] * 1e3,
         best[2] * 1e3, best[3] * 1e3, sink);
  return 0;
}
