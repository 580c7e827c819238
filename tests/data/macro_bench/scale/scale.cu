#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>

#include "../common/bench.h"
#include "scale.cuh"

/* b = alpha * a, element by element over a rows x cols matrix */
__global__ void scale_kernel(int rows, int cols, ELEM_T alpha, ELEM_T *a, ELEM_T *b)
{
	int col = blockIdx.x * blockDim.x + threadIdx.x;
	int row = blockIdx.y * blockDim.y + threadIdx.y;

	if (row < N_ROWS && col < N_COLS)
	{
		b[row * COLS + col] = alpha * a[row * COLS + col];
	}
}

/* y[i] = alpha * x[i] + y[i] over the first rows elements */
__global__ void axpy_kernel(int rows, ELEM_T alpha, ELEM_T *x, ELEM_T *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < N_ROWS)
	{
		y[i] = alpha * x[i] + y[i];
	}
}

#ifdef WITH_PADDING
/* bound and accumulator type exist only when WITH_PADDING is defined */
__global__ void padded_kernel(int rows, ACC_T *acc, ELEM_T *a)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < PAD_COLS)
	{
		acc[i] += a[i];
	}
}
#endif

void run(ELEM_T alpha, ELEM_T *a, ELEM_T *b, ELEM_T *x, ELEM_T *y)
{
	ELEM_T *a_gpu, *b_gpu, *x_gpu, *y_gpu;
	cudaMalloc((void **)&a_gpu, sizeof(ELEM_T) * ROWS * COLS);
	cudaMalloc((void **)&b_gpu, sizeof(ELEM_T) * ROWS * COLS);
	cudaMalloc((void **)&x_gpu, sizeof(ELEM_T) * ROWS);
	cudaMalloc((void **)&y_gpu, sizeof(ELEM_T) * ROWS);
	cudaMemcpy(a_gpu, a, sizeof(ELEM_T) * ROWS * COLS, cudaMemcpyHostToDevice);
	cudaMemcpy(x_gpu, x, sizeof(ELEM_T) * ROWS, cudaMemcpyHostToDevice);
	cudaMemcpy(y_gpu, y, sizeof(ELEM_T) * ROWS, cudaMemcpyHostToDevice);

	dim3 block(BLOCK_X, BLOCK_Y);
	dim3 grid((size_t)BENCH_CEIL(COLS, BLOCK_X), (size_t)BENCH_CEIL(ROWS, BLOCK_Y));
	scale_kernel<<<grid, block>>>(ROWS, COLS, alpha, a_gpu, b_gpu);

	dim3 block1(BLOCK_X * BLOCK_Y);
	dim3 grid1((size_t)BENCH_CEIL(ROWS, BLOCK_X * BLOCK_Y));
	axpy_kernel<<<grid1, block1>>>(ROWS, alpha, x_gpu, y_gpu);
	cudaDeviceSynchronize();

	cudaMemcpy(b, b_gpu, sizeof(ELEM_T) * ROWS * COLS, cudaMemcpyDeviceToHost);
	cudaMemcpy(y, y_gpu, sizeof(ELEM_T) * ROWS, cudaMemcpyDeviceToHost);
	cudaFree(a_gpu);
	cudaFree(b_gpu);
	cudaFree(x_gpu);
	cudaFree(y_gpu);
}

int main(void)
{
	ELEM_T *a = (ELEM_T *)calloc(ROWS * COLS, sizeof(ELEM_T));
	ELEM_T *b = (ELEM_T *)calloc(ROWS * COLS, sizeof(ELEM_T));
	ELEM_T *x = (ELEM_T *)calloc(ROWS, sizeof(ELEM_T));
	ELEM_T *y = (ELEM_T *)calloc(ROWS, sizeof(ELEM_T));
	run(1.5f, a, b, x, y);
	printf("%f\n", (double)b[0] + (double)y[0]);
	free(a);
	free(b);
	free(x);
	free(y);
	return 0;
}
