/* Minimal STREAM-style bandwidth probe for bench/hlogit.R's memory-traffic floor.
 * Usage: stream <MB per array> <threads> [reps]
 * Prints "TRIAD <GB/s> READ <GB/s>": best of reps of a[i] = b[i] + s*c[i]
 * (24 bytes per element counted, as STREAM does; write-allocate not counted) and of a
 * pure read-reduction sum(b) (8 bytes per element), over arrays of the given size.
 * Build: cc -O3 -march=native -fopenmp stream.c -o stream */
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

static double now(void) { return omp_get_wtime(); }

int main(int argc, char **argv) {
  double mb = argc > 1 ? atof(argv[1]) : 512;
  int threads = argc > 2 ? atoi(argv[2]) : 1;
  int reps = argc > 3 ? atoi(argv[3]) : 8;
  long n = (long)(mb * 1e6 / 8);
  omp_set_num_threads(threads);
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
  if (!a || !b || !c) { fprintf(stderr, "out of memory\n"); return 1; }
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) { a[i] = 0; b[i] = 1; c[i] = 2; }
  double best_t = 1e30, best_r = 1e30, s = 3, acc = 0;
  for (int r = 0; r < reps; ++r) {
    double t0 = now();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    double t1 = now();
    if (t1 - t0 < best_t) best_t = t1 - t0;
    double sum = 0;
    t0 = now();
#pragma omp parallel for simd schedule(static) reduction(+ : sum)
    for (long i = 0; i < n; ++i) sum += b[i];
    t1 = now();
    acc += sum;
    if (t1 - t0 < best_r) best_r = t1 - t0;
  }
  printf("TRIAD %.2f READ %.2f (MB/array %.0f, threads %d, check %.0f)\n", 24.0 * n / best_t / 1e9,
         8.0 * n / best_r / 1e9, mb, threads, acc + a[n / 2]);
  return 0;
}
