/* scale.cuh: sizes and types of the scale benchmark. */
#ifndef SCALE_CUH
#define SCALE_CUH

#ifndef HUGE_SET
# define ROWS 1024
# define COLS 2048
#else
# define ROWS 8192
# define COLS 4096
#endif

#define N_ROWS BENCH_BOUND(ROWS, rows)
#define N_COLS BENCH_BOUND(COLS, cols)

#ifndef ELEM_T
# define ELEM_T float
#endif

#ifdef WITH_PADDING
# define PAD_COLS (COLS + 8)
# define ACC_T double
#endif

#define BLOCK_X 32
#define BLOCK_Y 8

#endif /* SCALE_CUH */
