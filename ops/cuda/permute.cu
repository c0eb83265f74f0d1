/* ops/cuda/permute.cu: permute/copy of rank 1..8 on the GPU: row copies
 * with 16-byte vectors where the output's innermost dimension is contiguous
 * in the input, shared-memory tile transposes where it is not; optionally
 * with the activation fused into the store. Units: elements. */
#include "cuda_int.h"

#include <stdio.h>
#include <string.h>

/* The outer index space of a kernel: dims with input and output strides. */
struct pouter {
	int r;
	int64_t d[OPS_MAX_RANK], is[OPS_MAX_RANK], os[OPS_MAX_RANK];
};

__device__ __forceinline__ void outer_offsets(const struct pouter &p, int64_t i, int64_t *xo,
					      int64_t *yo)
{
	int64_t a = 0, b = 0;
	for (int k = p.r - 1; k >= 0; k--) {
		/* 32-bit division where both fit: the 64-bit one is a
		 * subroutine of some 70 instructions, paid per row */
		int64_t q = (uint64_t)i >> 32 == 0 && (uint64_t)p.d[k] >> 32 == 0
				    ? (int64_t)((uint32_t)i / (uint32_t)p.d[k])
				    : i / p.d[k];
		int64_t c = i - q * p.d[k];
		a += c * p.is[k];
		b += c * p.os[k];
		i = q;
	}
	*xo = a;
	*yo = b;
}

template <typename T, int A> __device__ __forceinline__ T maybe_act(T v)
{
	if constexpr (A != OPS_ACT_NONE)
		return cu_from_f<T>(cu_act(A, cu_to_f(v)));
	else
		return v;
}

/* The activation over a load unit E of elements T (E = T, or a 16-byte
 * vector of them). */
template <typename T, typename E, int A> __device__ __forceinline__ E act_unit(E u)
{
	if constexpr (sizeof(E) == sizeof(T)) {
		return maybe_act<T, A>(u);
	} else if constexpr (A == OPS_ACT_NONE) {
		return u;
	} else {
		constexpr int V = sizeof(E) / sizeof(T);
		T e[V];
		memcpy(e, &u, sizeof e);
#pragma unroll
		for (int k = 0; k < V; k++)
			e[k] = maybe_act<T, A>(e[k]);
		memcpy(&u, e, sizeof e);
		return u;
	}
}

/* Row copy: rows of L units E, contiguous in both x and y (L, the strides
 * and both bases in units). Long rows (rb 0): blockIdx.x a chunk of the
 * row, blockIdx.y (striding by gridDim.y <= 65535) the row. Short rows
 * (rb = blockDim.x / L >= 2 rows a block): thread t copies unit t % L of
 * row t / L of the block's group of rb rows, groups striding by gridDim.y;
 * the earlier kernel gave each short row a whole block, and a 256-byte
 * row (the attention permute's head_dim 128 in fp16, 16 vectors) kept 16
 * of its 256 threads busy: [8,128,32,128] (0,2,1,3) ran at 0.23 TB/s. */
template <typename T, typename E, int A>
__global__ void __launch_bounds__(256) k_perm_rows(const E *__restrict__ x, E *__restrict__ y,
						   int64_t L, int64_t rows, int64_t chunk, int rb,
						   struct pouter po)
{
	if (rb) {
		const int lr = (int)threadIdx.x / (int)L, i = (int)threadIdx.x - lr * (int)L;
		if (lr >= rb)
			return;
		for (int64_t row = (int64_t)blockIdx.y * rb + lr; row < rows;
		     row += (int64_t)gridDim.y * rb) {
			int64_t xo, yo;
			outer_offsets(po, row, &xo, &yo);
			__stcs(y + yo + i, act_unit<T, E, A>(__ldcs(x + xo + i)));
		}
		return;
	}
	for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
		int64_t xo, yo;
		outer_offsets(po, row, &xo, &yo);
		const int64_t c0 = (int64_t)blockIdx.x * chunk;
		const int64_t c1 = c0 + chunk < L ? c0 + chunk : L;
		for (int64_t i = c0 + threadIdx.x; i < c1; i += blockDim.x)
			__stcs(y + yo + i, act_unit<T, E, A>(__ldcs(x + xo + i)));
	}
}

/* A vector of B bytes (B = 1, 2, 4, 8 or 16), for the transpose's loads
 * and stores of VW elements. */
template <int B> struct pvec;
template <> struct pvec<1> { typedef uint8_t t; };
template <> struct pvec<2> { typedef uint16_t t; };
template <> struct pvec<4> { typedef uint32_t t; };
template <> struct pvec<8> { typedef uint2 t; };
template <> struct pvec<16> { typedef uint4 t; };

#define PT_THREADS 256

/* Stores a whole vector: through the write-back store intrinsics for 8 and
 * 16 bytes, which keep it one st.global.v2/v4 (a plain store of a vector
 * assembled by memcpy came out of nvcc as four or sixteen scalar stores,
 * each lane then touching a quarter of a sector per instruction: L2 saw 24%
 * more write bytes than the transpose wrote). */
__device__ __forceinline__ void pt_store(uint4 *p, uint4 v) { __stwb(p, v); }
__device__ __forceinline__ void pt_store(uint2 *p, uint2 v) { __stwb(p, v); }
template <typename V> __device__ __forceinline__ void pt_store(V *p, V v) { *p = v; }

/* Tile transpose: dim a is contiguous in x (stride 1) and has output stride
 * osa; dim b is contiguous in y and has input stride sb. A TS x TS tile
 * (TS = 32 or 64) is read along a into shared memory and written along b,
 * VW elements a load and a store (16 bytes where the dims, strides and
 * bases allow it, else one element): a thread issues all PASSES loads of
 * its share of the tile before the first shared-memory store, and all its
 * shared-memory gathers before the first global store. Rows are padded by
 * one element: with 4-byte elements the column gathers of the store phase
 * hit 16 banks per half warp, the two halves on disjoint banks (2-way at
 * worst). The loops have compile-time trip counts: the earlier version,
 * with loops starting at threadIdx and int64 bounds per element, kept one
 * 4-byte load a thread in flight and ran [4096,70000] at 0.44 of copy.
 * NT threads: 256, or fewer where a 32-wide tile of 16-byte vectors has
 * fewer (128 for 2-byte elements, 64 for bytes): with 256 threads a pass had
 * to cover whole rows, so those tiles moved 8 or 4 bytes a load, and the
 * lm-head's [64,152064] bf16 (1,0) ran in 20.8 us with 32-wide tiles
 * against 13.2 us with 64-wide ones. blockIdx.x: tiles of a, so that neighbouring blocks read neighbouring
 * stretches of each input row; blockIdx.y: tiles of b, blockIdx.z: the
 * outer index, both striding past 65535. */
template <typename T, int A, int TS, int VW, int NT>
__global__ void __launch_bounds__(NT) k_perm_tile(const T *__restrict__ x, T *__restrict__ y,
							  int64_t oa, int64_t osa, int64_t ob, int64_t sb,
							  int64_t nb, int64_t nouter, struct pouter po)
{
	typedef typename pvec<VW * sizeof(T)>::t V;
	constexpr int VPR = TS / VW;              /* vectors per tile row */
	constexpr int RPP = NT / VPR;             /* rows per pass */
	constexpr int PASSES = TS / RPP;
	static_assert(RPP * VPR == NT && PASSES * RPP == TS && PASSES >= 1,
		      "tile shape and vector width do not cover the tile");
	__shared__ T tile[TS][TS + 1];
	const int64_t a0 = (int64_t)blockIdx.x * TS;
	const int tr = threadIdx.x / VPR, tv = (threadIdx.x % VPR) * VW;
	for (int64_t z = blockIdx.z; z < nouter; z += gridDim.z) {
		int64_t xo, yo;
		outer_offsets(po, z, &xo, &yo);
		for (int64_t tb = blockIdx.y; tb < nb; tb += gridDim.y) {
			const int64_t b0 = tb * TS;
			V u[PASSES];
			const bool ain = a0 + tv < oa;
#pragma unroll
			for (int k = 0; k < PASSES; k++) {
				const int ib = tr + k * RPP;
				if (ain && b0 + ib < ob)
					u[k] = *reinterpret_cast<const V *>(x + xo + (b0 + ib) * sb + a0 + tv);
			}
#pragma unroll
			for (int k = 0; k < PASSES; k++) {
				const int ib = tr + k * RPP;
				T e[VW];
				memcpy(e, &u[k], sizeof e);
#pragma unroll
				for (int i = 0; i < VW; i++)
					tile[ib][tv + i] = e[i];
			}
			__syncthreads();
			const bool bin = b0 + tv < ob;
#pragma unroll
			for (int k = 0; k < PASSES; k++) {
				const int ia = tr + k * RPP;
				T e[VW];
#pragma unroll
				for (int i = 0; i < VW; i++)
					e[i] = maybe_act<T, A>(tile[tv + i][ia]);
				memcpy(&u[k], e, sizeof e);
			}
#pragma unroll
			for (int k = 0; k < PASSES; k++) {
				const int ia = tr + k * RPP;
				if (bin && a0 + ia < oa)
					pt_store(reinterpret_cast<V *>(y + yo + (a0 + ia) * osa + b0 + tv), u[k]);
			}
			__syncthreads();
		}
	}
}

template <typename T, int A>
static int perm_launch(cudaStream_t s, const struct ops_permute_dims *g, const void *x, void *y, int64_t ts_req,
		       char *shape, size_t shape_len, struct opr_error *err)
{
	const int es = (int)sizeof(T);
	struct pouter po;
	memset(&po, 0, sizeof po);

	if (g->s[g->r - 1] == 1) {
		/* row copy */
		int64_t L = g->o[g->r - 1], rows = g->n / L;
		int vec = (L * es) % 16 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)y % 16 == 0;
		for (int k = 0; k < g->r - 1; k++)
			vec = vec && (g->s[k] * es) % 16 == 0 && (g->os[k] * es) % 16 == 0;
		int64_t unit = vec ? 16 / es : 1;
		po.r = g->r - 1;
		for (int k = 0; k < po.r; k++) {
			po.d[k] = g->o[k];
			po.is[k] = g->s[k] / unit;
			po.os[k] = g->os[k] / unit;
		}
		int64_t Lu = L / unit, chunk = 256 * 8;
		int rb = Lu <= 128 ? (int)(256 / Lu) : 0;
		int64_t nx = rb ? 1 : (Lu + chunk - 1) / chunk;
		int64_t ny = rb ? (rows + rb - 1) / rb : rows;
		dim3 grid((unsigned)nx, (unsigned)(ny < 65535 ? ny : 65535)), block(256);
		if (vec)
			k_perm_rows<T, uint4, A><<<grid, block, 0, s>>>((const uint4 *)x, (uint4 *)y,
								       Lu, rows, chunk, rb, po);
		else
			k_perm_rows<T, T, A><<<grid, block, 0, s>>>((const T *)x, (T *)y, Lu, rows,
								   chunk, rb, po);
		if (shape)
			snprintf(shape, shape_len,
				 "perm_rows%s grid %ux%u block 256 (rows %lld, %d a block)",
				 vec ? "_vec" : "", grid.x, grid.y, (long long)rows, rb ? rb : 1);
		CU_LAUNCHED("permute row kernel");
		return 0;
	}
	/* transpose: b = innermost output dim, a = the dim of input stride 1 */
	int b = g->r - 1, a = -1;
	for (int k = 0; k < g->r; k++)
		if (g->s[k] == 1)
			a = k;
	if (a < 0)
		return opr_error_set(err, OPR_EINTERNAL, "permute without an input-contiguous dim");
	po.r = 0;
	for (int k = 0; k < g->r; k++) {
		if (k == a || k == b)
			continue;
		po.d[po.r] = g->o[k];
		po.is[po.r] = g->s[k];
		po.os[po.r] = g->os[k];
		po.r++;
	}
	int64_t oa = g->o[a], ob = g->o[b];
	int64_t nouter = g->n / (oa * ob);
	const int TS = ts_req >= 64 ? 64 : 32;
	int64_t na = (oa + TS - 1) / TS, nb = (ob + TS - 1) / TS;
	if (na > 2147483647LL)
		return opr_error_set(err, OPR_ELIMIT, "permute: %lld tiles in grid x", (long long)na);
	/* the vector width: 16 bytes where every vector lies inside both
	 * tensors and is aligned in both; else, for 32-wide tiles, 4 elements
	 * (the width that keeps 256 threads' passes on whole rows), else one.
	 * 64-wide tiles take 16 bytes at 256 threads. */
	const auto aligned = [&](int v) {
		int ok = oa % v == 0 && ob % v == 0 && g->s[b] % v == 0 && g->os[a] % v == 0 &&
			 (uintptr_t)x % (uintptr_t)(v * es) == 0 &&
			 (uintptr_t)y % (uintptr_t)(v * es) == 0;
		for (int k = 0; k < po.r; k++)
			ok = ok && po.is[k] % v == 0 && po.os[k] % v == 0;
		return ok;
	};
	constexpr int V16 = 16 / sizeof(T);
	const int vw = aligned(V16) ? V16 : TS == 32 && V16 > 4 && aligned(4) ? 4 : 1;
	int nt = TS == 64 || vw == 1 ? PT_THREADS : TS * TS / vw;
	if (nt > PT_THREADS)
		nt = PT_THREADS;
	dim3 grid((unsigned)na, (unsigned)(nb < 65535 ? nb : 65535),
		  (unsigned)(nouter < 65535 ? nouter : 65535)),
		block((unsigned)nt);
#define L_TILE(TSZ, W, N)                                                                     \
	k_perm_tile<T, A, TSZ, W, N><<<grid, block, 0, s>>>((const T *)x, (T *)y, oa, g->os[a], ob, \
							    g->s[b], nb, nouter, po)
	if (TS == 64 && vw == 1)
		L_TILE(64, 1, PT_THREADS);
	else if (TS == 64 && vw == V16)
		L_TILE(64, V16, PT_THREADS);
	else if (TS == 32 && vw == 1)
		L_TILE(32, 1, PT_THREADS);
	else if (TS == 32 && vw == V16)
		L_TILE(32, V16, 32 * 32 / V16 < PT_THREADS ? 32 * 32 / V16 : PT_THREADS);
	else if (TS == 32 && vw == 4)
		L_TILE(32, 4, PT_THREADS);
	else
		return opr_error_set(err, OPR_EINTERNAL, "permute: vector width %d", vw);
#undef L_TILE
	if (shape)
		snprintf(shape, shape_len,
			 "perm_tile<%d,vec %d> grid %ux%ux%u block %d (b tiles %lld, outer %lld%s)", TS,
			 vw, grid.x, grid.y, grid.z, nt, (long long)nb, (long long)nouter,
			 nb > 65535 || nouter > 65535 ? ", strided past 65535" : "");
	CU_LAUNCHED("permute tile kernel");
	return 0;
}

int cu_permute(cudaStream_t s, const struct ops_permute_job *j, const void *x, void *y,
	       int fused_act, char *shape, size_t shape_len, int *launches,
	       struct opr_error *err)
{
	struct ops_permute_dims g;
	int rc;

	ops_permute_coalesce(j, &g);
	if (g.n == 0)
		return 0;
	int64_t ts = j->tile_rows > j->tile_cols ? j->tile_rows : j->tile_cols;
	enum ops_act a = fused_act ? j->act : OPS_ACT_NONE;
	*launches += 1;
	if (a == OPS_ACT_NONE) {
		switch (ops_dtype_size(j->dtype)) {
		case 1:
			return perm_launch<uint8_t, OPS_ACT_NONE>(s, &g, x, y, ts, shape, shape_len, err);
		case 2:
			return perm_launch<uint16_t, OPS_ACT_NONE>(s, &g, x, y, ts, shape, shape_len, err);
		case 4:
			return perm_launch<uint32_t, OPS_ACT_NONE>(s, &g, x, y, ts, shape, shape_len, err);
		default:
			return opr_error_set(err, OPR_EINPUT, "permute dtype '%s' not supported",
					     ops_dtype_name(j->dtype));
		}
	}
	enum ops_dtype t = j->dtype;
#define L_PERM(T, A) rc = perm_launch<T, A>(s, &g, x, y, ts, shape, shape_len, err)
	switch (t) {
	case OPS_F32: ACT_SWITCH(L_PERM, float); break;
	case OPS_F16: ACT_SWITCH(L_PERM, __half); break;
	case OPS_BF16: ACT_SWITCH(L_PERM, __nv_bfloat16); break;
	default:
		return opr_error_set(err, OPR_EINPUT, "permute+activation needs a float dtype, not '%s'",
				     ops_dtype_name(t));
	}
#undef L_PERM
	return rc;
}
