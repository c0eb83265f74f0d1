/* ops/cuda/cuda_int.h: internals of the CUDA backend shared by its .cu files
 * only: the context, the error helper, dtype loads and stores, the fp32
 * activations on the device, and the kernel entry points each file provides.
 * Units: elements, bytes, ns. */
#ifndef OPS_CUDA_INT_H
#define OPS_CUDA_INT_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

/* the project's C headers, with C linkage */
extern "C" {
#include "../activation_int.h"
#include "../conv2d_int.h"
#include "../device_int.h"
#include "../ops_int.h"
#include "../qgemm_int.h"
}
#include "cuda.h"

struct ops_cuda {
	struct ops_cuda_info info;
	cudaStream_t stream;
	cudaEvent_t ev0, ev1;
	void *flush;            /* 2 x L2 bytes */
	size_t flush_bytes;
	int flush_toggle;
};

/* OPR_EIO with CUDA's message when rc is not cudaSuccess. */
int ops_cuda_check(cudaError_t rc, const char *what, struct opr_error *err);
#define CU_TRY(call, what)                                                  \
	do {                                                                \
		int rc_ = ops_cuda_check((call), (what), err);               \
		if (rc_ < 0)                                                \
			return rc_;                                         \
	} while (0)
/* After a launch: the launch error (bad shape, too much shared memory). */
#define CU_LAUNCHED(what) CU_TRY(cudaGetLastError(), (what))

/* ---- dtypes on the device: storage codes as in ops.h ------------------------ */

__device__ __forceinline__ float cu_ld(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ float cu_ld(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float cu_ld(const __nv_bfloat16 *p, int64_t i)
{
	return __bfloat162float(p[i]);
}
__device__ __forceinline__ void cu_st(float *p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void cu_st(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void cu_st(__nv_bfloat16 *p, int64_t i, float v)
{
	p[i] = __float2bfloat16_rn(v);
}
__device__ __forceinline__ float cu_to_f(float v) { return v; }
__device__ __forceinline__ float cu_to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float cu_to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T cu_from_f(float v);
template <> __device__ __forceinline__ float cu_from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half cu_from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 cu_from_f<__nv_bfloat16>(float v)
{
	return __float2bfloat16_rn(v);
}

/* ---- activations in fp32 (the fp64 references are ops_act_ref) -------------
 * exp and the division through the SFU (ex2.approx after a multiply by
 * log2 e: relative error about |x| 2^-24 + 2^-22, under 1e-6 for the |x| <= 16
 * that matter before the result saturates; the division as a * rcp.approx(b),
 * 1 ulp): the accurate expf and IEEE division made bf16 gelu-tanh issue-bound
 * (0.51 of copy on the H200, 0.65 of torch). Both flush denormals (.ftz): the
 * non-ftz forms add a fixup around each SFU op and, with the isinf branch
 * this replaced, kept bf16 gelu-tanh at 0.84 of copy; a flushed denormal
 * changes a result by under 2^-126 absolute. erfcf and tanhf stay the
 * library's. gelu-tanh, silu: x / (1 + e), which keeps relative accuracy for
 * negative x (as the host's kernels do); -inf gives e = inf and -inf * 0, so
 * it is selected to the limit, -0 (a finite x < 0 with e = inf gives -0
 * itself; +inf gives e = 0 and inf). */
__device__ __forceinline__ float cu_exp2(float x)
{
	float y;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
	return y;
}
__device__ __forceinline__ float cu_exp(float x) { return cu_exp2(x * 1.4426950408889634f); }
/* b = inf (exp overflowed) or b > 2^126 gives 0 * a, as __fdividef does */
__device__ __forceinline__ float cu_div(float a, float b)
{
	float r;
	asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
	return a * r;
}
__device__ __forceinline__ float cu_act(int a, float x)
{
	switch (a) {
	case OPS_ACT_RELU:
		return x < 0.0f ? 0.0f : x; /* NaN passes through */
	case OPS_ACT_GELU_ERF:
		return 0.5f * x * erfcf(-x * 0.70710678118654752f);
	case OPS_ACT_GELU_TANH: {
		/* exp(-2u), u = sqrt(2/pi) (x + 0.044715 x^3), as 2^(x (k1 + k2 x^2))
		 * with the constants folded: two multiplies and an FMA */
		const float k1 = -2.0f * 0.7978845608028654f * 1.4426950408889634f;
		const float k2 = k1 * 0.044715f;
		float r = cu_div(x, 1.0f + cu_exp2(x * fmaf(k2, x * x, k1)));
		return x == -INFINITY ? -0.0f : r;
	}
	case OPS_ACT_SILU: {
		float r = cu_div(x, 1.0f + cu_exp(-x));
		return x == -INFINITY ? -0.0f : r;
	}
	case OPS_ACT_SIGMOID:
		return cu_div(1.0f, 1.0f + cu_exp(-x));
	case OPS_ACT_TANH:
		return tanhf(x);
	default:
		return x;
	}
}

/* Instantiates M(T, A) for the run-time activation `a` (a variable in the
 * caller's scope). */
#define ACT_SWITCH(M, T)                                                     \
	switch (a) {                                                         \
	case OPS_ACT_RELU: M(T, OPS_ACT_RELU); break;                        \
	case OPS_ACT_GELU_ERF: M(T, OPS_ACT_GELU_ERF); break;                \
	case OPS_ACT_GELU_TANH: M(T, OPS_ACT_GELU_TANH); break;              \
	case OPS_ACT_SILU: M(T, OPS_ACT_SILU); break;                        \
	case OPS_ACT_SIGMOID: M(T, OPS_ACT_SIGMOID); break;                  \
	case OPS_ACT_TANH: M(T, OPS_ACT_TANH); break;                        \
	default: M(T, OPS_ACT_NONE); break;                                  \
	}

/* ---- coalesced tensor views (activation, permute) --------------------------- */

/* Up to 8 dims, innermost last; strides in elements. Passed by value to
 * kernels (under the 4 KiB parameter limit). */
struct cu_view {
	int rank;
	int64_t n;
	int64_t dims[OPS_MAX_RANK];
	int64_t xs[OPS_MAX_RANK];
	int64_t ys[OPS_MAX_RANK];
};
/* Drops size-1 dims and merges neighbours that are contiguous in both x and
 * y (rank 0 becomes one element of rank 1). */
void cu_view_coalesce(int rank, const int64_t *dims, const int64_t *xs, const int64_t *ys,
		      struct cu_view *v);

/* ---- launches each file provides (asynchronous on stream) ------------------- */

/* y[i] = act(x[i]) for i < n, contiguous, 16-byte aligned or not; tile_elems
 * elements per block (0: 8192), vec4: four 16-byte vectors in flight. */
int cu_act_contig(cudaStream_t s, enum ops_act a, enum ops_dtype t, const void *x, void *y,
		  int64_t n, int64_t tile_elems, int vec4, char *shape, size_t shape_len,
		  struct opr_error *err);
int cu_act_strided(cudaStream_t s, enum ops_act a, enum ops_dtype t, const void *x, void *y,
		   const struct cu_view *v, struct opr_error *err);
/* y[i] += bias[(i / inner) % nch] in dtype t (fp32 bias), n elements. */
int cu_bias_add(cudaStream_t s, enum ops_dtype t, void *y, const float *bias, int64_t n,
		int64_t inner, int64_t nch, struct opr_error *err);

/* Permute job on device buffers (ops/cuda/permute.cu). */
int cu_permute(cudaStream_t s, const struct ops_permute_job *j, const void *x, void *y,
	       int fused_act, char *shape, size_t shape_len, int *launches,
	       struct opr_error *err);

/* qgemm (ops/cuda/qgemm.cu): the state a run needs on the device. */
struct cu_qgemm {
	const struct ops_workload *w;
	struct ops_qgemm_tiles t;
	const void *a;
	const int8_t *b;
	const float *scale, *bias;
	void *y;
	long long *gacc;        /* [m,n] int64 accumulator, zero between launches */
	unsigned *tickets;      /* [ntn], zero between launches */
	void *acc_out;          /* unfused: [m,n] accumulators (accb bytes each) */
	long long *acc_check;   /* checked runs: the exact [m,n] accumulators */
	float *ytmp;            /* unfused fp32 intermediate = y */
	int accb;
	double a_scale, out_scale;
};
int cu_qgemm_run(cudaStream_t s, const struct cu_qgemm *q, int fused, char *shape,
		 size_t shape_len, int *launches, struct opr_error *err);

/* conv2d (ops/cuda/conv.cu). The implicit GEMM's split-K scratch: fp32
 * partial tiles and a ticket per tile (zero between launches), sized by
 * cu_conv_ws_size for the plan (0 and 0 when the plan does not split);
 * and the tensor-core kernel's weights, packed once by cu_conv_prepare
 * (after the weights are on the device) into the layout its shared memory
 * takes, so that a launch copies them with cp.async and converts nothing
 * (NULL for the other kernels). */
struct cu_conv_ws {
	float *ws;
	unsigned *tickets;
	size_t floats, ntickets;
	unsigned short *wpk;
	size_t wpk_bytes;
};
int cu_conv_prepare(cudaStream_t s, const struct ops_workload *w, const struct ops_plan *p,
		    int sms, const void *wt, struct cu_conv_ws *ws, struct opr_error *err);
int cu_conv_ws_size(const struct ops_workload *w, const struct ops_plan *p, int sms,
		    size_t *ws_floats, size_t *ntickets, struct opr_error *err);
int cu_conv_run(cudaStream_t s, const struct ops_workload *w, const struct ops_plan *p,
		const void *x, const void *wt, const float *bias, void *y, int smem_optin,
		int sms, const struct cu_conv_ws *ws, char *shape, size_t shape_len, int *launches,
		struct opr_error *err);

#endif
