/* bench.h: the macro layer shared by the kernels of this test project.
 * A loop bound is written BENCH_BOUND(FIXED, param): the compile-time size when
 * BENCH_FIXED_BOUNDS is defined, else the kernel's run-time parameter. */
#ifndef BENCH_H
#define BENCH_H

#ifdef BENCH_FIXED_BOUNDS
# define BENCH_BOUND(fixed, param) fixed
#else
# define BENCH_BOUND(fixed, param) param
#endif

#define BENCH_CEIL(a, b) (((a) + (b) - 1) / (b))

#endif /* BENCH_H */
