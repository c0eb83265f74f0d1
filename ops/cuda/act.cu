/* ops/cuda/act.cu: element-wise kernels of the CUDA backend: activations over
 * contiguous runs (16-byte vectors) and strided views, and the bias add of
 * the unfused groups. Units: elements. */
#include "cuda_int.h"

#include <stdio.h>
#include <string.h>

void cu_view_coalesce(int rank, const int64_t *dims, const int64_t *xs, const int64_t *ys,
		      struct cu_view *v)
{
	int r = 0;

	memset(v, 0, sizeof *v);
	v->n = 1;
	for (int i = 0; i < rank; i++)
		v->n *= dims[i];
	for (int i = 0; i < rank; i++) {
		if (dims[i] == 1)
			continue;
		/* dim i merges into the previous kept dim when stepping the
		 * previous one equals stepping dims[i] of this one, in both */
		if (r > 0 && v->xs[r - 1] == xs[i] * dims[i] && v->ys[r - 1] == ys[i] * dims[i]) {
			v->dims[r - 1] *= dims[i];
			v->xs[r - 1] = xs[i];
			v->ys[r - 1] = ys[i];
			continue;
		}
		v->dims[r] = dims[i];
		v->xs[r] = xs[i];
		v->ys[r] = ys[i];
		r++;
	}
	if (r == 0) {
		v->dims[0] = v->n ? 1 : 0;
		v->xs[0] = v->ys[0] = 1;
		r = 1;
	}
	v->rank = r;
}

/* A pair of 16-bit elements through f in fp32: widened and narrowed two at
 * a time (one packed conversion a pair). */
template <int A> __device__ __forceinline__ __nv_bfloat162 act_pair(__nv_bfloat162 h)
{
	float2 f = __bfloat1622float2(h);
	return __floats2bfloat162_rn(cu_act(A, f.x), cu_act(A, f.y));
}
template <int A> __device__ __forceinline__ __half2 act_pair(__half2 h)
{
	float2 f = __half22float2(h);
	return __floats2half2_rn(cu_act(A, f.x), cu_act(A, f.y));
}
template <typename T> struct act_pair_of { typedef T t; };
template <> struct act_pair_of<__half> { typedef __half2 t; };
template <> struct act_pair_of<__nv_bfloat16> { typedef __nv_bfloat162 t; };

/* One 16-byte vector of elements of T through f, in fp32; 16-bit types by
 * pairs (a 16-bit vector carries twice the elements, hence twice the
 * arithmetic, of an fp32 one for the same bytes). */
template <typename T, int A> __device__ __forceinline__ uint4 act_vec(uint4 u)
{
	if constexpr (sizeof(T) == 2) {
		typedef typename act_pair_of<T>::t H;
		H e[4];
		memcpy(e, &u, 16);
#pragma unroll
		for (int i = 0; i < 4; i++)
			e[i] = act_pair<A>(e[i]);
		memcpy(&u, e, 16);
	} else {
		constexpr int V = 16 / sizeof(T);
		T e[V];
		memcpy(e, &u, 16);
#pragma unroll
		for (int i = 0; i < V; i++)
			e[i] = cu_from_f<T>(cu_act(A, cu_to_f(e[i])));
		memcpy(&u, e, 16);
	}
	return u;
}

/* A plan tile of `tile` elements (starting at a multiple of tile, a
 * multiple of the vector width) runs as `sub` blocks of 256 threads, each
 * over an equal run of its vectors (ACT_BLOCK_VECS at most): a batch of U
 * vectors per thread is loaded before any of them is used and, when
 * double-buffered (U = 4), the next batch is loaded before the current one
 * is computed and stored, so 2 U loads a thread are in flight. Plain
 * read-only loads and plain stores: with the streaming hints (ld/st .cs) and
 * a block per whole tile (578 blocks of 29056 fp32 on 64 MiB) the kernel ran
 * at 0.82-0.87 of copy, against torch's 0.97 with plain accesses. Runs of
 * 1024 vectors a block (one double-buffered batch a thread) beat 2048 and
 * 512 on 64 MiB bf16 (silu 34.0 us against 35.2 and 37.4; gelu-tanh 35.4,
 * 35.4, 40.7; relu within 1%). */
#define ACT_THREADS 256
#ifndef ACT_BLOCK_VECS
#define ACT_BLOCK_VECS (ACT_THREADS * 4)
#endif

template <typename T, int A, int U>
__global__ void __launch_bounds__(ACT_THREADS) k_act_vec(const T *__restrict__ x, T *__restrict__ y,
							 int64_t n, int64_t tile, int sub)
{
	constexpr int V = 16 / sizeof(T);
	const int64_t tix = blockIdx.x / sub, part = blockIdx.x % sub;
	const int64_t t0 = tix * tile;
	const int64_t t1 = t0 + tile < n ? t0 + tile : n;
	const int64_t nv = (t1 - t0) / V;
	const int64_t per = (nv + sub - 1) / sub;
	const int64_t v0 = part * per, v1 = v0 + per < nv ? v0 + per : nv;
	const uint4 *xv = reinterpret_cast<const uint4 *>(x + t0);
	uint4 *yv = reinterpret_cast<uint4 *>(y + t0);
	constexpr int STEP = ACT_THREADS * U;
	uint4 cur[U], nxt[U];

	int64_t b = v0 + threadIdx.x;
#pragma unroll
	for (int i = 0; i < U; i++)
		if (b + i * ACT_THREADS < v1)
			cur[i] = __ldg(xv + b + i * ACT_THREADS);
	for (; b < v1; b += STEP) {
		const int64_t bn = b + STEP;
		if (U > 1) {
#pragma unroll
			for (int i = 0; i < U; i++)
				if (bn + i * ACT_THREADS < v1)
					nxt[i] = __ldg(xv + bn + i * ACT_THREADS);
		}
#pragma unroll
		for (int i = 0; i < U; i++)
			if (b + i * ACT_THREADS < v1)
				yv[b + i * ACT_THREADS] = act_vec<T, A>(cur[i]);
		if (U > 1) {
#pragma unroll
			for (int i = 0; i < U; i++)
				cur[i] = nxt[i];
		} else if (bn < v1) {
			cur[0] = __ldg(xv + bn);
		}
	}
	/* the tile's tail past its last whole vector: the tile's last block */
	if (part == sub - 1)
		for (int64_t j = t0 + nv * V + threadIdx.x; j < t1; j += ACT_THREADS)
			cu_st(y, j, cu_act(A, cu_ld(x, j)));
}

/* Unaligned data: an element per thread, a block per tile. */
template <typename T, int A>
__global__ void __launch_bounds__(256) k_act_scalar(const T *__restrict__ x, T *__restrict__ y,
						    int64_t n, int64_t tile)
{
	const int64_t t0 = (int64_t)blockIdx.x * tile;
	const int64_t t1 = t0 + tile < n ? t0 + tile : n;
	for (int64_t j = t0 + threadIdx.x; j < t1; j += blockDim.x)
		cu_st(y, j, cu_act(A, cu_ld(x, j)));
}

/* Strided views: an element per thread through the coalesced index (grid
 * stride, so any element count fits one launch). In place works: each
 * element is read and then written by the same thread. */
template <typename T, int A>
__global__ void __launch_bounds__(256) k_act_strided(const T *x, T *y, struct cu_view v)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < v.n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int64_t r = i, xo = 0, yo = 0;
		for (int d = v.rank - 1; d >= 0; d--) {
			int64_t q = r / v.dims[d], c = r - q * v.dims[d];
			xo += c * v.xs[d];
			yo += c * v.ys[d];
			r = q;
		}
		cu_st(y, yo, cu_act(A, cu_ld(x, xo)));
	}
}

/* The dispatch over (dtype, activation) of the templates above. */
#define DT_CASES(M)                                                          \
	switch (t) {                                                         \
	case OPS_F32: ACT_SWITCH(M, float); break;                            \
	case OPS_F16: ACT_SWITCH(M, __half); break;                           \
	case OPS_BF16: ACT_SWITCH(M, __nv_bfloat16); break;                   \
	default:                                                             \
		return opr_error_set(err, OPR_EINPUT, "activation dtype '%s' is not fp32, fp16 or bf16", \
				     ops_dtype_name(t));                     \
	}

int cu_act_contig(cudaStream_t s, enum ops_act a, enum ops_dtype t, const void *x, void *y,
		  int64_t n, int64_t tile, int vec4, char *shape, size_t shape_len,
		  struct opr_error *err)
{
	const int64_t V = 16 / (int64_t)ops_dtype_size(t);
	int aligned = ((uintptr_t)x % 16 == 0) && ((uintptr_t)y % 16 == 0);

	if (n <= 0)
		return 0;
	if (tile <= 0)
		tile = 8192;
	tile = (tile + V - 1) / V * V; /* whole vectors per block */
	int64_t tiles = (n + tile - 1) / tile;
	/* blocks per tile: the launch shape the plan's tile gives on the GPU
	 * (see k_act_vec); the unaligned path keeps a block per tile */
	int64_t tv = (tile < n ? tile : n) / V;
	int sub = aligned ? (int)((tv + ACT_BLOCK_VECS - 1) / ACT_BLOCK_VECS) : 1;
	if (sub < 1)
		sub = 1;
	int64_t blocks = tiles * sub;
	if (blocks > 2147483647LL)
		return opr_error_set(err, OPR_ELIMIT, "activation of %lld elements in tiles of %lld "
				     "needs more than 2^31-1 blocks", (long long)n, (long long)tile);
	dim3 g((unsigned)blocks), b(ACT_THREADS);
#define L_VEC(T, A)                                                                  \
	do {                                                                         \
		if (!aligned)                                                        \
			k_act_scalar<T, A><<<g, b, 0, s>>>((const T *)x, (T *)y, n, tile); \
		else if (vec4)                                                       \
			k_act_vec<T, A, 4><<<g, b, 0, s>>>((const T *)x, (T *)y, n, tile, sub); \
		else                                                                 \
			k_act_vec<T, A, 1><<<g, b, 0, s>>>((const T *)x, (T *)y, n, tile, sub); \
	} while (0)
	DT_CASES(L_VEC)
#undef L_VEC
	if (shape)
		snprintf(shape, shape_len, "act_%s<%s,%s> grid %lld block 256 tile %lld (%d blocks a tile)",
			 aligned ? "vec" : "scalar", ops_dtype_name(t), ops_act_name(a),
			 (long long)blocks, (long long)tile, sub);
	CU_LAUNCHED("activation kernel");
	return 0;
}

int cu_act_strided(cudaStream_t s, enum ops_act a, enum ops_dtype t, const void *x, void *y,
		   const struct cu_view *v, struct opr_error *err)
{
	if (v->n <= 0)
		return 0;
	int64_t blocks = (v->n + 255) / 256;
	dim3 g((unsigned)(blocks < 65536 * 8 ? blocks : 65536 * 8)), b(256);
#define L_STR(T, A) k_act_strided<T, A><<<g, b, 0, s>>>((const T *)x, (T *)y, *v)
	DT_CASES(L_STR)
#undef L_STR
	CU_LAUNCHED("strided activation kernel");
	return 0;
}

template <typename T>
__global__ void __launch_bounds__(256) k_bias(T *y, const float *__restrict__ bias, int64_t n,
					      int64_t inner, int64_t nch)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		cu_st(y, i, cu_ld(y, i) + bias[(i / inner) % nch]);
}

int cu_bias_add(cudaStream_t s, enum ops_dtype t, void *y, const float *bias, int64_t n,
		int64_t inner, int64_t nch, struct opr_error *err)
{
	if (n <= 0)
		return 0;
	int64_t blocks = (n + 255) / 256;
	dim3 g((unsigned)(blocks < 65536 * 8 ? blocks : 65536 * 8)), b(256);
	switch (t) {
	case OPS_F32:
		k_bias<float><<<g, b, 0, s>>>((float *)y, bias, n, inner, nch);
		break;
	case OPS_F16:
		k_bias<__half><<<g, b, 0, s>>>((__half *)y, bias, n, inner, nch);
		break;
	case OPS_BF16:
		k_bias<__nv_bfloat16><<<g, b, 0, s>>>((__nv_bfloat16 *)y, bias, n, inner, nch);
		break;
	default:
		return opr_error_set(err, OPR_EINTERNAL, "bias add on dtype '%s'", ops_dtype_name(t));
	}
	CU_LAUNCHED("bias kernel");
	return 0;
}
