/* ops/cuda/conv.cu: conv2d on the GPU, NCHW input, KCRS weights, NCHW
 * output in the storage dtype, fp32 accumulation: untiled (a thread per
 * output), direct (patch and weights staged in shared memory) and im2col as
 * an implicit GEMM (tensor cores for fp16/bf16, FFMA for fp32), each with
 * the bias + activation epilogue for the fused group. Units: elements. */
#include "cuda_int.h"

#include <stdio.h>

/* The shape as kernels read it (by value). */
struct cdims {
	int n, c, h, w, k, r, s, sh, sw, ph, pw, dh, dw, groups, oh, ow, cpg, kpg;
};

static void cdims_of(const struct ops_conv_dims *d, struct cdims *c)
{
	c->n = (int)d->n;
	c->c = (int)d->c;
	c->h = (int)d->h;
	c->w = (int)d->w;
	c->k = (int)d->k;
	c->r = (int)d->r;
	c->s = (int)d->s;
	c->sh = (int)d->sh;
	c->sw = (int)d->sw;
	c->ph = (int)d->ph;
	c->pw = (int)d->pw;
	c->dh = (int)d->dh;
	c->dw = (int)d->dw;
	c->groups = (int)d->groups;
	c->oh = (int)d->oh;
	c->ow = (int)d->ow;
	c->cpg = (int)d->cpg;
	c->kpg = (int)d->kpg;
}

/* acc (+ bias, activation when epi) stored to y as T. */
template <typename T>
__device__ __forceinline__ void c_store(T *y, int64_t i, float acc, int epi, const float *bias,
					int kk, int act)
{
	if (epi) {
		acc = acc + bias[kk];
		acc = cu_act(act, acc);
	}
	cu_st(y, i, acc);
}

/* ---- untiled: a thread per output ------------------------------------------ */

template <typename T>
__global__ void __launch_bounds__(256) k_conv_untiled(const T *__restrict__ x, const T *__restrict__ wt,
						      const float *__restrict__ bias, T *__restrict__ y,
						      struct cdims d, int epi, int act)
{
	const int64_t total = (int64_t)d.n * d.k * d.oh * d.ow;
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
	     i += (int64_t)gridDim.x * blockDim.x) {
		const int ox = (int)(i % d.ow), oy = (int)((i / d.ow) % d.oh);
		const int kk = (int)((i / ((int64_t)d.ow * d.oh)) % d.k);
		const int nn = (int)(i / ((int64_t)d.ow * d.oh * d.k));
		const int g = kk / d.kpg;
		float acc = 0.0f;
		for (int c = 0; c < d.cpg; c++) {
			const T *xc = x + ((int64_t)nn * d.c + (int64_t)g * d.cpg + c) * d.h * d.w;
			const T *wc = wt + ((int64_t)kk * d.cpg + c) * d.r * d.s;
			for (int r = 0; r < d.r; r++) {
				const int iy = oy * d.sh - d.ph + r * d.dh;
				if (iy < 0 || iy >= d.h)
					continue;
				for (int s = 0; s < d.s; s++) {
					const int ix = ox * d.sw - d.pw + s * d.dw;
					if (ix >= 0 && ix < d.w)
						acc = fmaf(cu_ld(xc, (int64_t)iy * d.w + ix),
							   cu_ld(wc, r * d.s + s), acc);
				}
			}
		}
		c_store(y, i, acc, epi, bias, kk, act);
	}
}

/* ---- direct: patch + weights in shared memory, TK channels per thread ----- */

template <typename T, int TK>
__global__ void k_conv_direct(const T *__restrict__ x, const T *__restrict__ wt,
			      const float *__restrict__ bias, T *__restrict__ y, struct cdims d,
			      int toh, int tow, int tc, int epi, int act)
{
	extern __shared__ float smem[];
	const int pth = (toh - 1) * d.sh + (d.r - 1) * d.dh + 1;
	const int ptw = (tow - 1) * d.sw + (d.s - 1) * d.dw + 1;
	float *patch = smem;                        /* [tc][pth][ptw] */
	float *wsh = smem + (int64_t)tc * pth * ptw; /* [TK][tc][r][s] */
	const int ntw = (d.ow + tow - 1) / tow;
	const int oy0 = (blockIdx.x / ntw) * toh, ox0 = (blockIdx.x % ntw) * tow;
	const int k0 = blockIdx.y * TK;
	const int nn = blockIdx.z / d.groups, g = blockIdx.z % d.groups;
	const int tx = threadIdx.x % tow, ty = threadIdx.x / tow;
	const int iy0 = oy0 * d.sh - d.ph, ix0 = ox0 * d.sw - d.pw;
	const int rs = d.r * d.s;
	float acc[TK];
#pragma unroll
	for (int k = 0; k < TK; k++)
		acc[k] = 0.0f;

	for (int c0 = 0; c0 < d.cpg; c0 += tc) {
		const int nc = d.cpg - c0 < tc ? d.cpg - c0 : tc;
		for (int e = threadIdx.x; e < nc * pth * ptw; e += blockDim.x) {
			const int c = e / (pth * ptw), py = (e / ptw) % pth, px = e % ptw;
			const int iy = iy0 + py, ix = ix0 + px;
			float v = 0.0f;
			if (iy >= 0 && iy < d.h && ix >= 0 && ix < d.w)
				v = cu_ld(x, (((int64_t)nn * d.c + (int64_t)g * d.cpg + c0 + c) * d.h + iy) *
						     d.w + ix);
			patch[e] = v;
		}
		for (int e = threadIdx.x; e < TK * nc * rs; e += blockDim.x) {
			const int k = e / (nc * rs), rem = e % (nc * rs);
			const int kk = k0 + k;
			float v = 0.0f;
			if (kk < d.kpg)
				v = cu_ld(wt, ((int64_t)(g * d.kpg + kk) * d.cpg + c0) * rs + rem);
			wsh[e] = v;
		}
		__syncthreads();
		if (ty < toh) {
			for (int c = 0; c < nc; c++)
				for (int r = 0; r < d.r; r++)
					for (int s = 0; s < d.s; s++) {
						const float xv = patch[(c * pth + ty * d.sh + r * d.dh) * ptw +
								       tx * d.sw + s * d.dw];
						const int wo = (c * d.r + r) * d.s + s;
#pragma unroll
						for (int k = 0; k < TK; k++)
							acc[k] = fmaf(xv, wsh[k * nc * rs + wo], acc[k]);
					}
		}
		__syncthreads();
	}
	const int oy = oy0 + ty, ox = ox0 + tx;
	if (ty >= toh || oy >= d.oh || ox >= d.ow)
		return;
#pragma unroll
	for (int k = 0; k < TK; k++) {
		const int kk = k0 + k;
		if (kk >= d.kpg)
			break;
		const int kg = g * d.kpg + kk;
		c_store(y, (((int64_t)nn * d.k + kg) * d.oh + oy) * d.ow + ox, acc[k], epi, bias, kg,
			act);
	}
}

/* ---- im2col as an implicit GEMM -----------------------------------------------
 * Per group: C[m][n] = sum_q A[m][q] B[q][n], m = (image, oy, ox), n = the
 * output channel in the group, q = (c, r, s) in the weights' own order, so
 * B's row for channel n is the contiguous weight row w[n][q]. Block tile
 * 64 x 64, K step 32 (16 for fp32); the next K step's loads are issued into
 * registers before the current one is computed (register double buffering). */

#define IG_BM 64
#define IG_BN 64

/* The (c, r, s) of each K index q, as the offsets an A load needs:
 * off = c*h*w + r*dh*w + s*dw, ry = r*dh, sx = s*dw, built once per block in
 * shared memory (K <= IG_TAB) so that the gather does no integer division;
 * a larger K decomposes q on the fly. */
#define IG_TAB 2048
struct ig_tab {
	int off[IG_TAB];
	int ry[IG_TAB], sx[IG_TAB];
};

__device__ __forceinline__ void ig_tab_fill(struct ig_tab *t, const struct cdims &d, int Kg)
{
	const int rs = d.r * d.s;
	for (int q = threadIdx.x; q < Kg && q < IG_TAB; q += blockDim.x) {
		const int c = q / rs, rem = q - c * rs, r = rem / d.s, s = rem - r * d.s;
		t->ry[q] = r * d.dh;
		t->sx[q] = s * d.dw;
		t->off[q] = (c * d.h + r * d.dh) * d.w + s * d.dw;
	}
}

/* x at (pixel, q) or 0 outside the image or past K; xb = x of the pixel's
 * image and group at (iyb, ixb), the patch origin. */
template <typename T>
__device__ __forceinline__ T ig_ld_a(const T *xg, const struct cdims &d, int iyb, int ixb, int q,
				    int Kg, bool mvalid, const struct ig_tab *t, bool tab)
{
	if (!mvalid || q >= Kg)
		return cu_from_f<T>(0.0f);
	int ry, sx, off;
	if (tab) {
		ry = t->ry[q];
		sx = t->sx[q];
		off = t->off[q];
	} else {
		const int rs = d.r * d.s;
		const int c = q / rs, rem = q - c * rs;
		const int r = rem / d.s, s = rem - r * d.s;
		ry = r * d.dh;
		sx = s * d.dw;
		off = (c * d.h + ry) * d.w + sx;
	}
	const int iy = iyb + ry, ix = ixb + sx;
	if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w)
		return cu_from_f<T>(0.0f);
	return xg[(int64_t)iyb * d.w + ixb + off];
}

/* One output of the implicit GEMM tile: element (m, n) of group g. */
template <typename T>
__device__ __forceinline__ void ig_store(T *y, const struct cdims &d, int g, int m, int n, float v,
					 int epi, const float *bias, int act)
{
	const int M = d.n * d.oh * d.ow;
	if (m >= M || n >= d.kpg)
		return;
	const int ox = m % d.ow, oy = (m / d.ow) % d.oh, nn = m / (d.ow * d.oh);
	const int kg = g * d.kpg + n;
	c_store(y, (((int64_t)nn * d.k + kg) * d.oh + oy) * d.ow + ox, v, epi, bias, kg, act);
}

/* Split-K over the implicit GEMM's K (input channels x taps): part `part` of
 * S covers K steps [part*steps/S, (part+1)*steps/S). Each part writes its fp32
 * partial tile to ws (tile t's parts at ws + (t*S + part)*te, te = the
 * tile's elements, li[i] a value's place in its tile); the last part of the
 * tile to finish (a ticket, as qgemm's split-K) adds the S partials in part
 * order, so the result does not depend on which part came last (the GPU
 * review path checks that the output is the same on every run), and resets
 * the ticket. Returns 1 in the block that holds the sums in v. */
template <int NV>
__device__ __forceinline__ int sk_reduce(float *v, const int *li, float *ws, unsigned *tickets,
					 int64_t tile, int part, int S, int te)
{
	__shared__ int last;
	float *base = ws + tile * S * te;
#pragma unroll
	for (int i = 0; i < NV; i++)
		__stcg(base + (int64_t)part * te + li[i], v[i]);
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0)
		last = atomicAdd(&tickets[tile], 1u) == (unsigned)(S - 1);
	__syncthreads();
	if (!last)
		return 0;
	__threadfence();
#pragma unroll
	for (int i = 0; i < NV; i++) {
		float a = 0.0f;
		for (int q = 0; q < S; q++)
			a += __ldcg(base + (int64_t)q * te + li[i]);
		v[i] = a;
	}
	if (threadIdx.x == 0)
		tickets[tile] = 0;
	return 1;
}

template <typename T> struct mma_op;
template <> struct mma_op<__half> {
	static __device__ __forceinline__ void run(float *c, const unsigned *a, const unsigned *b)
	{
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
			     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
			     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	}
};
template <> struct mma_op<__nv_bfloat16> {
	static __device__ __forceinline__ void run(float *c, const unsigned *a, const unsigned *b)
	{
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
			     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
			     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	}
};

/* Tensor cores: 128 threads, four warps of 32x32 (2 x 4 mma tiles of
 * m16n8k16). Shared rows padded to 40 elements: the fragment reads of a warp
 * (8 rows x 4 words) then fall in 32 distinct banks. */
#define IG_BK 32
#define IG_LD (IG_BK + 8)
template <typename T, int BM>
__global__ void __launch_bounds__(128) k_conv_igemm_mma(const T *__restrict__ x, const T *__restrict__ wt,
							const float *__restrict__ bias, T *__restrict__ y,
							struct cdims d, int epi, int act, int S,
							float *ws, unsigned *tickets)
{
	constexpr int WM = BM / 32;       /* warps along M: 2 (BM 64) or 1 (BM 32) */
	constexpr int NI = 2 * WM;        /* n8 tiles a warp: 64 / (4 / WM) / 8 */
	constexpr int NA = BM / 4;        /* A elements a thread loads per K step */
	__shared__ __align__(16) T As[BM][IG_LD];
	__shared__ __align__(16) T Bs[IG_BN][IG_LD];
	__shared__ struct ig_tab tab;
	const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	const int gq = lane / 4, tq = lane % 4;
	const int wm = warp % WM, wn = warp / WM;
	const int g = blockIdx.z / S, part = blockIdx.z % S;
	const int M = d.n * d.oh * d.ow, Kg = d.cpg * d.r * d.s;
	const int m0 = blockIdx.x * BM, n0 = blockIdx.y * IG_BN;
	const int steps = (Kg + IG_BK - 1) / IG_BK;
	const int kbeg = part * steps / S * IG_BK;
	const int kend = min((part + 1) * steps / S * IG_BK, Kg);
	/* this thread's A row: fixed pixel, K columns tid/BM + (128/BM) i */
	const int am = tid % BM, akc = tid / BM;
	const int mpix = m0 + am;
	const bool mvalid = mpix < M;
	int iyb = 0, ixb = 0;
	const T *xg = x;
	if (mvalid) {
		const int ox = mpix % d.ow, oy = (mpix / d.ow) % d.oh, nn = mpix / (d.ow * d.oh);
		iyb = oy * d.sh - d.ph;
		ixb = ox * d.sw - d.pw;
		xg = x + ((int64_t)nn * d.c + (int64_t)g * d.cpg) * d.h * d.w;
	}
	const T *wg = wt + (int64_t)g * d.kpg * Kg;
	const bool use_tab = Kg <= IG_TAB;
	/* weight rows of 8-element multiples: 16-byte loads (2 per thread) */
	const bool bvec = Kg % 8 == 0;
	T ra[NA], rb[16];
	uint4 rbv[2];
	float acc[2][NI][4];
	ig_tab_fill(&tab, d, Kg);
	__syncthreads();
#pragma unroll
	for (int i = 0; i < 2; i++)
#pragma unroll
		for (int j = 0; j < NI; j++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				acc[i][j][e] = 0.0f;

	auto load = [&](int k0) {
#pragma unroll
		for (int i = 0; i < NA; i++)
			ra[i] = ig_ld_a(xg, d, iyb, ixb, k0 + akc + (128 / BM) * i, Kg, mvalid, &tab, use_tab);
		if (bvec) {
#pragma unroll
			for (int i = 0; i < 2; i++) {
				const int e = tid + 128 * i, n = e / 4, q = k0 + (e % 4) * 8, nc = n0 + n;
				rbv[i] = q < Kg && nc < d.kpg
						 ? __ldg((const uint4 *)(wg + (int64_t)nc * Kg + q))
						 : make_uint4(0, 0, 0, 0);
			}
			return;
		}
#pragma unroll
		for (int i = 0; i < 16; i++) {
			const int e = tid + 128 * i, kc = e % 32, n = e / 32;
			const int q = k0 + kc, nc = n0 + n;
			rb[i] = q < Kg && nc < d.kpg ? wg[(int64_t)nc * Kg + q] : cu_from_f<T>(0.0f);
		}
	};
	load(kbeg);
	for (int k0 = kbeg; k0 < kend; k0 += IG_BK) {
#pragma unroll
		for (int i = 0; i < NA; i++)
			As[am][akc + (128 / BM) * i] = ra[i];
		if (bvec) {
#pragma unroll
			for (int i = 0; i < 2; i++) {
				const int e = tid + 128 * i;
				*(uint4 *)&Bs[e / 4][(e % 4) * 8] = rbv[i];
			}
		} else {
#pragma unroll
			for (int i = 0; i < 16; i++) {
				const int e = tid + 128 * i;
				Bs[e / 32][e % 32] = rb[i];
			}
		}
		__syncthreads();
		if (k0 + IG_BK < kend)
			load(k0 + IG_BK);
#pragma unroll
		for (int ks = 0; ks < IG_BK; ks += 16) {
			unsigned af[2][4], bf[NI][2];
#pragma unroll
			for (int mi = 0; mi < 2; mi++) {
				const int rb0 = wm * 32 + mi * 16;
				af[mi][0] = *(const unsigned *)&As[rb0 + gq][ks + 2 * tq];
				af[mi][1] = *(const unsigned *)&As[rb0 + gq + 8][ks + 2 * tq];
				af[mi][2] = *(const unsigned *)&As[rb0 + gq][ks + 2 * tq + 8];
				af[mi][3] = *(const unsigned *)&As[rb0 + gq + 8][ks + 2 * tq + 8];
			}
#pragma unroll
			for (int ni = 0; ni < NI; ni++) {
				const int cb = wn * NI * 8 + ni * 8;
				bf[ni][0] = *(const unsigned *)&Bs[cb + gq][ks + 2 * tq];
				bf[ni][1] = *(const unsigned *)&Bs[cb + gq][ks + 2 * tq + 8];
			}
#pragma unroll
			for (int mi = 0; mi < 2; mi++)
#pragma unroll
				for (int ni = 0; ni < NI; ni++)
					mma_op<T>::run(acc[mi][ni], af[mi], bf[ni]);
		}
		__syncthreads();
	}
	if (S > 1) {
		int li[2 * NI * 4];
#pragma unroll
		for (int mi = 0; mi < 2; mi++)
#pragma unroll
			for (int ni = 0; ni < NI; ni++)
#pragma unroll
				for (int e = 0; e < 4; e++)
					li[(mi * NI + ni) * 4 + e] =
						(wm * 32 + mi * 16 + gq + (e / 2) * 8) * IG_BN +
						wn * NI * 8 + ni * 8 + 2 * tq + e % 2;
		const int64_t tile = ((int64_t)g * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
		if (!sk_reduce<2 * NI * 4>(&acc[0][0][0], li, ws, tickets, tile, part, S, BM * IG_BN))
			return;
	}
#pragma unroll
	for (int mi = 0; mi < 2; mi++)
#pragma unroll
		for (int ni = 0; ni < NI; ni++) {
			const int mr = m0 + wm * 32 + mi * 16 + gq;
			const int nc = n0 + wn * NI * 8 + ni * 8 + 2 * tq;
			ig_store(y, d, g, mr, nc, acc[mi][ni][0], epi, bias, act);
			ig_store(y, d, g, mr, nc + 1, acc[mi][ni][1], epi, bias, act);
			ig_store(y, d, g, mr + 8, nc, acc[mi][ni][2], epi, bias, act);
			ig_store(y, d, g, mr + 8, nc + 1, acc[mi][ni][3], epi, bias, act);
		}
}

/* FFMA: 256 threads, each a 4 x 4 block of the 64 x 64 tile, K step 16. */
#define IF_BK 16
template <typename T>
__global__ void __launch_bounds__(256) k_conv_igemm_ffma(const T *__restrict__ x, const T *__restrict__ wt,
							 const float *__restrict__ bias, T *__restrict__ y,
							 struct cdims d, int epi, int act, int S,
							 float *ws, unsigned *tickets)
{
	__shared__ __align__(16) float As[IF_BK][IG_BM];
	__shared__ __align__(16) float Bs[IF_BK][IG_BN + 4];
	__shared__ struct ig_tab tab;
	const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
	const int g = blockIdx.z / S, part = blockIdx.z % S;
	const int M = d.n * d.oh * d.ow, Kg = d.cpg * d.r * d.s;
	const int m0 = blockIdx.x * IG_BM, n0 = blockIdx.y * IG_BN;
	const int steps = (Kg + IF_BK - 1) / IF_BK;
	const int kbeg = part * steps / S * IF_BK;
	const int kend = min((part + 1) * steps / S * IF_BK, Kg);
	const int am = tid % 64, akc = tid / 64;
	const int mpix = m0 + am;
	const bool mvalid = mpix < M;
	int iyb = 0, ixb = 0;
	const T *xg = x;
	if (mvalid) {
		const int ox = mpix % d.ow, oy = (mpix / d.ow) % d.oh, nn = mpix / (d.ow * d.oh);
		iyb = oy * d.sh - d.ph;
		ixb = ox * d.sw - d.pw;
		xg = x + ((int64_t)nn * d.c + (int64_t)g * d.cpg) * d.h * d.w;
	}
	const T *wg = wt + (int64_t)g * d.kpg * Kg;
	const bool use_tab = Kg <= IG_TAB;
	float ra[4], rb[4], acc[4][4];
	ig_tab_fill(&tab, d, Kg);
	__syncthreads();
#pragma unroll
	for (int i = 0; i < 4; i++)
#pragma unroll
		for (int j = 0; j < 4; j++)
			acc[i][j] = 0.0f;
	auto load = [&](int k0) {
#pragma unroll
		for (int i = 0; i < 4; i++)
			ra[i] = cu_to_f(ig_ld_a(xg, d, iyb, ixb, k0 + akc + 4 * i, Kg, mvalid, &tab, use_tab));
#pragma unroll
		for (int i = 0; i < 4; i++) {
			const int e = tid + 256 * i, kc = e % IF_BK, n = e / IF_BK;
			const int q = k0 + kc, nc = n0 + n;
			rb[i] = q < Kg && nc < d.kpg ? cu_to_f(wg[(int64_t)nc * Kg + q]) : 0.0f;
		}
	};
	load(kbeg);
	for (int k0 = kbeg; k0 < kend; k0 += IF_BK) {
#pragma unroll
		for (int i = 0; i < 4; i++)
			As[akc + 4 * i][am] = ra[i];
#pragma unroll
		for (int i = 0; i < 4; i++) {
			const int e = tid + 256 * i;
			Bs[e % IF_BK][e / IF_BK] = rb[i];
		}
		__syncthreads();
		if (k0 + IF_BK < kend)
			load(k0 + IF_BK);
#pragma unroll
		for (int kc = 0; kc < IF_BK; kc++) {
			const float4 a4 = *(const float4 *)&As[kc][ty * 4];
			const float4 b4 = *(const float4 *)&Bs[kc][tx * 4];
			const float a[4] = { a4.x, a4.y, a4.z, a4.w }, b[4] = { b4.x, b4.y, b4.z, b4.w };
#pragma unroll
			for (int i = 0; i < 4; i++)
#pragma unroll
				for (int j = 0; j < 4; j++)
					acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
		}
		__syncthreads();
	}
	if (S > 1) {
		int li[16];
#pragma unroll
		for (int i = 0; i < 4; i++)
#pragma unroll
			for (int j = 0; j < 4; j++)
				li[i * 4 + j] = (ty * 4 + i) * IG_BN + tx * 4 + j;
		const int64_t tile = ((int64_t)g * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
		if (!sk_reduce<16>(&acc[0][0], li, ws, tickets, tile, part, S, IG_BM * IG_BN))
			return;
	}
#pragma unroll
	for (int i = 0; i < 4; i++)
#pragma unroll
		for (int j = 0; j < 4; j++)
			ig_store(y, d, g, m0 + ty * 4 + i, n0 + tx * 4 + j, acc[i][j], epi, bias, act);
}

/* ---- dispatch ------------------------------------------------------------------ */

/* The implicit GEMM's launch: block tile rows bm (16-bit: 32 when 64-row
 * tiles would give fewer blocks than two an SM, as at n = 1: 49 blocks on
 * 132 SMs), the grid, and the split-K S: the plan's split_k (clamped to the
 * K steps), else 1. No split is chosen on its own: at n = 1 on the H200,
 * enough parts for about four blocks an SM (fp16: 98 tiles x 6 parts of 3 K
 * steps; fp32: 49 x 11) ran slower than no split, 47.1 against 40.3 us in
 * fp16 and 53.4 against 48.6 us in fp32, so the per-step latency the split
 * was to hide is not what bounds these blocks. */
struct ig_shape {
	int bm, split;
	unsigned gx, gy, gz;
	int64_t tiles;
};

static void ig_shape_of(const struct cdims &cd, int es, int split_req, int sms, struct ig_shape *sh)
{
	const int64_t M = (int64_t)cd.n * cd.oh * cd.ow;
	const int Kg = cd.cpg * cd.r * cd.s, bk = es == 2 ? IG_BK : IF_BK;
	const int steps = (Kg + bk - 1) / bk;
	sh->gy = (unsigned)((cd.kpg + IG_BN - 1) / IG_BN);
	sh->gz = (unsigned)cd.groups;
	sh->bm = 64;
	if (es == 2 && (M + 63) / 64 * sh->gy * sh->gz < 2 * (int64_t)sms)
		sh->bm = 32;
	sh->gx = (unsigned)((M + sh->bm - 1) / sh->bm);
	sh->tiles = (int64_t)sh->gx * sh->gy * sh->gz;
	int S = split_req > 0 ? split_req : 1;
	if (S > steps)
		S = steps;
	if ((int64_t)sh->gz * S > 65535)
		S = (int)(65535 / sh->gz);
	sh->split = S < 1 ? 1 : S;
}

int cu_conv_ws_size(const struct ops_workload *w, const struct ops_plan *p, int sms,
		    size_t *ws_floats, size_t *ntickets, struct opr_error *err)
{
	struct ops_conv_dims d;
	struct cdims cd;
	struct ig_shape sh;
	int rc;

	*ws_floats = *ntickets = 0;
	if (p->strategy != OPS_STRAT_IM2COL)
		return 0;
	if ((rc = ops_conv_dims_get(w, &d, err)) < 0)
		return rc;
	cdims_of(&d, &cd);
	ig_shape_of(cd, (int)ops_dtype_size(w->dtype), p->split_k, sms, &sh);
	if (sh.split > 1) {
		*ws_floats = (size_t)sh.tiles * (size_t)sh.split * (size_t)sh.bm * IG_BN;
		*ntickets = (size_t)sh.tiles;
	}
	return 0;
}

template <typename T>
static int conv_launch(cudaStream_t s, const struct cdims &cd, const struct ops_conv_tiles &t,
		       enum ops_strategy strat, const void *xv, const void *wv, const float *bias,
		       void *yv, int epi, int act, int smem_optin, int sms, int split_req,
		       const struct cu_conv_ws *ws, char *shape, size_t shape_len,
		       struct opr_error *err)
{
	const T *x = (const T *)xv, *wt = (const T *)wv;
	T *y = (T *)yv;
	const int64_t total = (int64_t)cd.n * cd.k * cd.oh * cd.ow;

	if ((int64_t)cd.n * cd.groups > 65535)
		return opr_error_set(err, OPR_ELIMIT, "conv2d: n*groups %lld exceeds grid z 65535",
				     (long long)cd.n * cd.groups);
	if (strat == OPS_STRAT_UNTILED) {
		int64_t blocks = (total + 255) / 256;
		dim3 g((unsigned)(blocks < 65536 * 16 ? blocks : 65536 * 16)), b(256);
		k_conv_untiled<T><<<g, b, 0, s>>>(x, wt, bias, y, cd, epi, act);
		if (shape)
			snprintf(shape, shape_len, "conv_untiled grid %u block 256", g.x);
		CU_LAUNCHED("conv2d untiled kernel");
		return 0;
	}
	if (strat == OPS_STRAT_DIRECT) {
		int toh = (int)t.toh, tow = (int)t.tow, tc = (int)t.tc;
		if (tow > 256)
			tow = 256;
		while (toh * tow > 1024 && toh > 1)
			toh /= 2;
		const int tk = t.tk >= 16 ? 16 : t.tk >= 8 ? 8 : 4;
		const int pth = (toh - 1) * cd.sh + (cd.r - 1) * cd.dh + 1;
		const int ptw = (tow - 1) * cd.sw + (cd.s - 1) * cd.dw + 1;
		size_t limit = smem_optin < 96 * 1024 ? (size_t)smem_optin : 96 * 1024;
		size_t bytes;
		for (;;) {
			bytes = ((size_t)tc * pth * ptw + (size_t)tk * tc * cd.r * cd.s) * 4;
			if (bytes <= limit || tc == 1)
				break;
			tc = (tc + 1) / 2;
		}
		if (bytes > (size_t)smem_optin)
			return opr_error_set(err, OPR_ELIMIT,
					     "conv2d direct tile needs %zu bytes of shared memory, "
					     "the device has %d per block", bytes, smem_optin);
		int nth = (cd.oh + toh - 1) / toh, ntw = (cd.ow + tow - 1) / tow;
		int threads = (toh * tow + 31) / 32 * 32;
		dim3 g((unsigned)(nth * ntw), (unsigned)((cd.kpg + tk - 1) / tk),
		       (unsigned)(cd.n * cd.groups)), b((unsigned)threads);
#define L_DIR(TKV)                                                                        \
	do {                                                                              \
		CU_TRY(cudaFuncSetAttribute(k_conv_direct<T, TKV>,                        \
					    cudaFuncAttributeMaxDynamicSharedMemorySize,  \
					    (int)bytes), "shared memory attribute");        \
		k_conv_direct<T, TKV><<<g, b, bytes, s>>>(x, wt, bias, y, cd, toh, tow, tc, epi, act); \
	} while (0)
		if (tk == 16)
			L_DIR(16);
		else if (tk == 8)
			L_DIR(8);
		else
			L_DIR(4);
#undef L_DIR
		if (shape)
			snprintf(shape, shape_len,
				 "conv_direct<tk %d> grid %ux%ux%u block %d tile %dx%d tile_c %d smem %zu",
				 tk, g.x, g.y, g.z, threads, toh, tow, tc, bytes);
		CU_LAUNCHED("conv2d direct kernel");
		return 0;
	}
	/* im2col: implicit GEMM */
	struct ig_shape sh;
	ig_shape_of(cd, (int)sizeof(T), split_req, sms, &sh);
	if (sh.split > 1 && (!ws || !ws->ws || !ws->tickets ||
			     ws->floats < (size_t)sh.tiles * sh.split * sh.bm * IG_BN ||
			     ws->ntickets < (size_t)sh.tiles))
		return opr_error_set(err, OPR_EINTERNAL, "conv2d split-K %d without its scratch",
				     sh.split);
	float *wsp = sh.split > 1 ? ws->ws : NULL;
	unsigned *tk = sh.split > 1 ? ws->tickets : NULL;
	dim3 g(sh.gx, sh.gy, sh.gz * (unsigned)sh.split);
	if constexpr (sizeof(T) == 2) {
		if (sh.bm == 32)
			k_conv_igemm_mma<T, 32><<<g, 128, 0, s>>>(x, wt, bias, y, cd, epi, act, sh.split, wsp, tk);
		else
			k_conv_igemm_mma<T, 64><<<g, 128, 0, s>>>(x, wt, bias, y, cd, epi, act, sh.split, wsp, tk);
		if (shape)
			snprintf(shape, shape_len,
				 "conv_igemm_mma m16n8k16 grid %ux%ux%u block 128 tile %dx64x32 split_k %d",
				 g.x, g.y, g.z, sh.bm, sh.split);
	} else {
		k_conv_igemm_ffma<T><<<g, 256, 0, s>>>(x, wt, bias, y, cd, epi, act, sh.split, wsp, tk);
		if (shape)
			snprintf(shape, shape_len,
				 "conv_igemm_ffma grid %ux%ux%u block 256 tile 64x64x16 split_k %d", g.x,
				 g.y, g.z, sh.split);
	}
	CU_LAUNCHED("conv2d implicit GEMM kernel");
	return 0;
}

int cu_conv_run(cudaStream_t s, const struct ops_workload *w, const struct ops_plan *p,
		const void *x, const void *wt, const float *bias, void *y, int smem_optin,
		int sms, const struct cu_conv_ws *ws, char *shape, size_t shape_len, int *launches,
		struct opr_error *err)
{
	struct ops_conv_dims d;
	struct ops_conv_tiles t;
	struct cdims cd;
	int rc;
	const int fused_group = w->group == OPS_G_CONV_BIAS_ACT;
	const int epi = fused_group && p->fused;

	if ((rc = ops_conv_dims_get(w, &d, err)) < 0)
		return rc;
	ops_conv_tiles_get(&d, p, &t);
	cdims_of(&d, &cd);
	switch (w->dtype) {
	case OPS_F32:
		rc = conv_launch<float>(s, cd, t, p->strategy, x, wt, bias, y, epi, w->act, smem_optin,
					sms, p->split_k, ws, shape, shape_len, err);
		break;
	case OPS_F16:
		rc = conv_launch<__half>(s, cd, t, p->strategy, x, wt, bias, y, epi, w->act, smem_optin,
					 sms, p->split_k, ws, shape, shape_len, err);
		break;
	case OPS_BF16:
		rc = conv_launch<__nv_bfloat16>(s, cd, t, p->strategy, x, wt, bias, y, epi, w->act,
						smem_optin, sms, p->split_k, ws, shape, shape_len, err);
		break;
	default:
		return opr_error_set(err, OPR_EINPUT, "conv2d dtype '%s' is not fp32, fp16 or bf16",
				     ops_dtype_name(w->dtype));
	}
	if (rc < 0)
		return rc;
	*launches += 1;
	if (!fused_group || p->fused)
		return 0;
	const int64_t ny = d.n * d.k * d.oh * d.ow;
	if ((rc = cu_bias_add(s, w->dtype, y, bias, ny, d.oh * d.ow, d.k, err)) < 0)
		return rc;
	*launches += 1;
	if ((rc = cu_act_contig(s, w->act, w->dtype, y, y, ny, 0, 1, NULL, 0, err)) < 0)
		return rc;
	*launches += 1;
	return 0;
}
