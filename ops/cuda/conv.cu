/* ops/cuda/conv.cu: conv2d on the GPU, NCHW input, KCRS weights, NCHW
 * output in the storage dtype, fp32 accumulation: untiled (a thread per
 * output), direct (patch and weights staged in shared memory) and im2col as
 * an implicit GEMM (tensor cores for fp16/bf16 over a shared-memory input
 * patch, FFMA for fp32 over a gathered A tile), each with the bias +
 * activation epilogue for the fused group. Units: elements. */
#include "cuda_int.h"

#include <stdio.h>
#include <string.h>

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
 * output channel in the group, q = the (c, r, s) of the weights. The FFMA
 * kernel (fp32, and the fallback of the tensor-core one) takes q in the
 * weights' own order, so B's row for channel n is the contiguous weight row
 * w[n][q]: block tile 64 x 64, K step 16, the next K step's loads issued
 * into registers before the current one is computed (register double
 * buffering). The tensor-core kernel (below) takes q tap-major. */

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
template <int NV, typename LI>
__device__ __forceinline__ int sk_reduce(float *v, LI li, float *ws, unsigned *tickets,
					 int64_t tile, int part, int S, int te)
{
	__shared__ int last;
	float *base = ws + tile * S * te;
#pragma unroll
	for (int i = 0; i < NV; i++)
		__stcg(base + (int64_t)part * te + li(i), v[i]);
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
			a += __ldcg(base + (int64_t)q * te + li(i));
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

/* Tensor cores (fp16, bf16): a block of 256 threads (8 warps) computes
 * output tiles of th x tw pixels of one image (BM >= th*tw GEMM rows) by 64
 * output channels. Per step (one chunk of CK input channels of the group)
 * the input patch the tile needs, (th-1)*sh + (r-1)*dh + 1 rows by
 * (tw-1)*sw + (s-1)*dw + 1 columns, zero outside the image, is stored in
 * shared memory channel-innermost ([pixel][channel], 16 bytes a store) and
 * the chunk's weights as [tap][n][channel]: the A rows of tap (r, s) are
 * then the patch's pixel rows shifted by (r*dh, s*dw), read with ldmatrix
 * with no im2col copy (K = the chunk's channels x the taps, in tap-major
 * order, which the sum does not depend on), B's rows with ldmatrix as well.
 * The patch's rows are padded by 16 bytes and the weights' rows of 64
 * channels XOR-swizzled in 16-byte units by n % 8 (rows of 16 padded to
 * 24): no bank conflicts for ldmatrix over 8 consecutive pixels or output
 * channels, and a tap's addresses one add from the lane's (the weights
 * before were [n][tap][channel], swizzled by row, converted from KCRS by
 * every block with 2-byte stores: with them the 98 blocks at n = 1 ran
 * 22.6 us, now 10.7; at n = 32 91.7, now 66.3, on the H200). The weights
 * are packed into that layout once when the instance is made
 * (cu_conv_prepare) and copied by cp.async. The next step's patch is loaded into registers (PG groups
 * of 8 channels a thread; more is loaded when it is stored) while the
 * current one is computed: NCHW gives no 16-byte runs along the channels and
 * the taps' shifts break the alignment cp.async needs, so the patch comes
 * through registers as coalesced 2-byte loads along the pixels. The grid is
 * persistent over the tiles (x) and the split-K parts; the weights of the
 * block's 64 channels stay in shared memory across tiles when the group's
 * channels are one chunk and K is not split. The epilogue stages the tile
 * through shared memory so that the output is written along its rows, 16
 * bytes a store when the tile and row widths are multiples of 8. */
#define MT 256        /* threads of the mma kernel */
#define MN 64         /* output channels a block */

struct mplan {
	int th, tw, pph, ppw, pp; /* tile, patch rows, cols, pixels */
	int tpr, tpi, tiles;      /* tiles a row of tiles, an image; per (group, n tile) */
	int nch, split, items;    /* chunks of CK channels, K parts, tiles * split */
	int resident, vec_out;    /* weights kept across tiles; 16-byte output stores */
};

/* The patch as [pixel][channel], rows of CK channels padded by 8 (16
 * bytes): rows 144 (48) bytes apart put 8 consecutive pixels' 16-byte
 * ldmatrix rows in distinct banks, and a tap's shift of the rows moves
 * every lane's address by the same amount, so each A load's address is
 * one add from the lane's pixel. */
template <int CK> __device__ __forceinline__ int m_off(int row, int chunk)
{
	return row * (CK + 8) + (chunk << 3);
}

/* The weights of a chunk as [tap][n][channel], packed so once when the
 * instance is made (cu_conv_prepare): rows of 64 channels XOR-swizzled in
 * 16-byte units by n % 8 (the 8 rows of an ldmatrix are 8 consecutive n,
 * and the swizzle is the lane's alone, the same on every tap), rows of 16
 * padded to 24. */
#define M_CKW(CK) ((CK) == 64 ? 64 : (CK) + 8)
template <int CK> __device__ __forceinline__ int m_woff(int tap, int n, int chunk)
{
	if (CK == 64)
		return (tap * MN + n) * 64 + ((chunk ^ (n & 7)) << 3);
	return (tap * MN + n) * (CK + 8) + (chunk << 3);
}

/* ldmatrix x4 at shared address a (the constant parts of a tap's
 * addresses, k steps and n pairs, fold into the instruction's offset) */
__device__ __forceinline__ void m_ldsm4(unsigned *r, unsigned a)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(a));
}

/* Where tile t's patch starts: image nn, input row iy0 and column ix0, and
 * its output origin oy0, ox0. */
struct mtile {
	int nn, oy0, ox0, iy0, ix0;
};
__device__ __forceinline__ struct mtile m_tile(const struct cdims &d, const struct mplan &P, int t)
{
	struct mtile r;
	r.nn = t / P.tpi;
	const int rt = t - r.nn * P.tpi, ty = rt / P.tpr;
	r.oy0 = ty * P.th;
	r.ox0 = (rt - ty * P.tpr) * P.tw;
	r.iy0 = r.oy0 * d.sh - d.ph;
	r.ix0 = r.ox0 * d.sw - d.pw;
	return r;
}

/* A group of the patch of tile tl, chunk ci: pixel (py, px), channels
 * 8j .. 8j+7 of the chunk, as 2-byte loads, 0 outside the image or the
 * group. */
template <int CK>
__device__ __forceinline__ uint4 m_patch_group(const unsigned short *xs, const struct cdims &d,
					       const struct mtile &tl, int g, int ci, int py, int px,
					       int j)
{
	const int iy = tl.iy0 + py, ix = tl.ix0 + px;
	const int c8 = ci * CK + j * 8;
	int cv = d.cpg - c8;
	if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w)
		cv = 0;
	unsigned short v[8];
	const int64_t hw = (int64_t)d.h * d.w;
	const unsigned short *src =
		xs + (((int64_t)tl.nn * d.c + (int64_t)g * d.cpg + c8) * d.h + iy) * d.w + ix;
#pragma unroll
	for (int u = 0; u < 8; u++)
		v[u] = u < cv ? __ldg(src + u * hw) : (unsigned short)0;
	return make_uint4(v[0] | (unsigned)v[1] << 16, v[2] | (unsigned)v[3] << 16,
			  v[4] | (unsigned)v[5] << 16, v[6] | (unsigned)v[7] << 16);
}

/* Group e of a step's patch: pixel p = e % pp, channels 8 (e / pp) ..., as
 * (py, px, j) packed 10 | 12 | 3 bits (the host keeps patches inside), -1
 * past the groups; the same for every tile. */
__device__ __forceinline__ int m_group_pack(const struct mplan &P, int G, int e)
{
	if (e >= G)
		return -1;
	const int j = e / P.pp, p = e - j * P.pp, py = p / P.ppw;
	return py | (p - py * P.ppw) << 10 | j << 22;
}
#define M_PY(k) ((k) & 1023)
#define M_PX(k) (((k) >> 10) & 4095)
#define M_J(k) ((k) >> 22)

/* The packed weights of a chunk (bytes, a multiple of 16) into shared
 * memory by cp.async (L2 only, no registers on the way): 16 bytes a
 * thread a step, one commit group, waited before the barrier that
 * precedes the mma. */
__device__ __forceinline__ void m_wcopy(unsigned short *wsm, const unsigned short *src, int bytes)
{
	const unsigned sa = (unsigned)__cvta_generic_to_shared(wsm);
	const char *g = (const char *)src;
	for (int o = threadIdx.x * 16; o < bytes; o += MT * 16)
		asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa + o), "l"(g + o));
	asm volatile("cp.async.commit_group;" ::);
}
__device__ __forceinline__ void m_wwait(void)
{
	asm volatile("cp.async.wait_group 0;" ::: "memory");
}

/* Packs KCRS weights into the kernel's chunk images (m_woff), one image
 * per (group, tile of 64 output channels, chunk of CK channels), 0 past
 * the group's channels or kpg: element e of the whole array a thread. */
template <int CK>
__global__ void k_conv_wpack(const unsigned short *__restrict__ w, unsigned short *__restrict__ out,
			     struct cdims d, int gy, int nch, int64_t total)
{
	constexpr int CKW = M_CKW(CK);
	const int RS = d.r * d.s;
	const int64_t img = (int64_t)MN * RS * CKW;
	for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
	     e += (int64_t)gridDim.x * blockDim.x) {
		const int64_t im = e / img;
		const int within = (int)(e - im * img);
		const int row = within / CKW, col = within - row * CKW;
		const int tap = row / MN, n = row - tap * MN;
		const int ci = (int)(im % nch), nb = (int)(im / nch % gy), g = (int)(im / nch / gy);
		int cl;
		if (CK == 64)
			cl = (((col >> 3) ^ (n & 7)) << 3) | (col & 7);
		else
			cl = col < CK ? col : CK; /* the padding: CK is past the chunk */
		const int kk = nb * MN + n, c = ci * CK + cl;
		unsigned short v = 0;
		if (cl < CK && kk < d.kpg && c < d.cpg)
			v = w[(((int64_t)g * d.kpg + kk) * d.cpg + c) * RS + tap];
		out[e] = v;
	}
}

template <typename T, int BM, int WMW, int CK>
__global__ void __launch_bounds__(MT, 2)
	k_conv_igemm_mma(const T *__restrict__ x, const unsigned short *__restrict__ wpk,
			 const float *__restrict__ bias, T *__restrict__ y, struct cdims d,
			 struct mplan P, int epi, int act, float *ws, unsigned *tickets)
{
	constexpr int WNW = 8 / WMW;           /* warps along N */
	constexpr int MI = BM / WMW / 16;      /* m16 tiles a warp */
	constexpr int NJ = MN / WNW / 8;       /* n8 tiles a warp (even) */
	constexpr int PG = BM == 128 ? 8 : 4;  /* patch groups a thread prefetched */
	constexpr int CKW = M_CKW(CK);
	constexpr int CS = BM + 8;             /* epilogue row stride */
	extern __shared__ __align__(128) uint4 m_smem[];
	const int RS = d.r * d.s;
	const int wimg = MN * RS * CKW;        /* a chunk's packed weights, elements */
	unsigned short *wsm = (unsigned short *)m_smem;
	unsigned short *psm = wsm + wimg;
	const unsigned short *xs = (const unsigned short *)x;
	const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	const int wm = warp % WMW, wn = warp / WMW, gq = lane / 4, tq = lane % 4;
	const int g = blockIdx.z, n0 = blockIdx.y * MN;
	const unsigned short *wimgs = wpk + ((int64_t)g * gridDim.y + blockIdx.y) * P.nch * wimg;
	const int G = P.pp * (CK / 8); /* patch groups a step */
	/* this lane's ldmatrix addresses (bytes, shared window): A, its pixel
	 * row of each m16 tile and its 8-channel half; B, its n row of the
	 * warp's first n16 pair and the swizzled chunk of each k16 step (the
	 * swizzle is lane & 7 for every n row the lane reads) */
	const unsigned pbase = (unsigned)__cvta_generic_to_shared(psm);
	const unsigned wbase = (unsigned)__cvta_generic_to_shared(wsm);
	unsigned pa[MI];
#pragma unroll
	for (int mi = 0; mi < MI; mi++) {
		const int m = wm * MI * 16 + mi * 16 + (lane & 15);
		const int ty = m / P.tw, tx = m - ty * P.tw;
		const int pix = m < P.th * P.tw ? ty * d.sh * P.ppw + tx * d.sw : 0;
		pa[mi] = pbase + 2 * m_off<CK>(pix, lane >> 4);
	}
	const int nr0 = wn * NJ * 8 + ((lane >> 4) << 3) + (lane & 7);
	/* the lane's 16-byte unit of k16 step kk: (2 kk + half) ^ (n % 8) when
	 * swizzled; rows of 128 bytes from a 128-byte aligned base, so the
	 * address of step kk is that of step 0 XOR 32 kk (one LOP3 a step) */
	const unsigned brow = wbase + 2 * m_woff<CK>(0, nr0, (lane >> 3) & 1);
	float acc[MI][NJ][4];
	uint4 pre[PG];
	int gk[PG]; /* this thread's prefetched groups, packed */
#pragma unroll
	for (int i = 0; i < PG; i++)
		gk[i] = m_group_pack(P, G, tid + i * MT);

	int w = blockIdx.x;
	int cb = w % P.split * P.nch / P.split, ce = (w % P.split + 1) * P.nch / P.split;
	int ci = cb;
	struct mtile tl = m_tile(d, P, w / P.split);
	if (P.resident)
		m_wcopy(wsm, wimgs, wimg * 2);
#pragma unroll
	for (int i = 0; i < PG; i++)
		if (gk[i] >= 0)
			pre[i] = m_patch_group<CK>(xs, d, tl, g, ci, M_PY(gk[i]), M_PX(gk[i]), M_J(gk[i]));
	for (;;) {
		__syncthreads(); /* the last step's reads of the patch (and weights) are done */
		if (!P.resident)
			m_wcopy(wsm, wimgs + (int64_t)ci * wimg, wimg * 2);
#pragma unroll
		for (int i = 0; i < PG; i++)
			if (gk[i] >= 0)
				*(uint4 *)(psm + m_off<CK>(M_PY(gk[i]) * P.ppw + M_PX(gk[i]), M_J(gk[i]))) = pre[i];
		for (int e = tid + PG * MT; e < G; e += MT) {
			const int k = m_group_pack(P, G, e);
			*(uint4 *)(psm + m_off<CK>(M_PY(k) * P.ppw + M_PX(k), M_J(k))) =
				m_patch_group<CK>(xs, d, tl, g, ci, M_PY(k), M_PX(k), M_J(k));
		}
		m_wwait();
		__syncthreads();
		/* the next step: the next chunk, else this block's next item */
		int nw = w, nci = ci + 1, ncb = cb, nce = ce;
		struct mtile ntl = tl;
		if (nci >= ce) {
			nw = w + gridDim.x;
			ncb = nw % P.split * P.nch / P.split;
			nce = (nw % P.split + 1) * P.nch / P.split;
			nci = ncb;
			if (nw < P.items)
				ntl = m_tile(d, P, nw / P.split);
		}
		if (nw < P.items) {
#pragma unroll
			for (int i = 0; i < PG; i++)
				if (gk[i] >= 0)
					pre[i] = m_patch_group<CK>(xs, d, ntl, g, nci, M_PY(gk[i]),
								   M_PX(gk[i]), M_J(gk[i]));
		}
		if (ci == cb) {
#pragma unroll
			for (int mi = 0; mi < MI; mi++)
#pragma unroll
				for (int nj = 0; nj < NJ; nj++)
#pragma unroll
					for (int e = 0; e < 4; e++)
						acc[mi][nj][e] = 0.0f;
		}
		for (int r = 0; r < d.r; r++)
			for (int s = 0; s < d.s; s++) {
				const unsigned poff = 2u * (CK + 8) * (r * d.dh * P.ppw + s * d.dw);
				const unsigned wt0 = brow + 2u * MN * CKW * (r * d.s + s);
				unsigned ta[MI];
#pragma unroll
				for (int mi = 0; mi < MI; mi++)
					ta[mi] = pa[mi] + poff;
#pragma unroll
				for (int kk = 0; kk < CK / 16; kk++) {
					unsigned af[MI][4], bf[NJ][2];
					const unsigned wk = CK == 64 ? wt0 ^ (32u * kk) : wt0;
#pragma unroll
					for (int mi = 0; mi < MI; mi++)
						m_ldsm4(af[mi], ta[mi] + 32 * kk);
#pragma unroll
					for (int nb = 0; nb < NJ / 2; nb++) {
						unsigned b4[4];
						m_ldsm4(b4, wk + nb * 16 * CKW * 2);
						bf[2 * nb][0] = b4[0];
						bf[2 * nb][1] = b4[1];
						bf[2 * nb + 1][0] = b4[2];
						bf[2 * nb + 1][1] = b4[3];
					}
#pragma unroll
					for (int mi = 0; mi < MI; mi++)
#pragma unroll
						for (int nj = 0; nj < NJ; nj++)
							mma_op<T>::run(acc[mi][nj], af[mi], bf[nj]);
				}
			}
		if (ci + 1 == ce) {
			/* the item's last chunk: its part of the tile is summed */
			int keep = 1;
			if (P.split > 1) {
				/* value i = (mi, nj, e) of this thread at its place in the tile */
				auto li = [&](int i) {
					const int mi = i / (NJ * 4), nj = i / 4 % NJ, e = i % 4;
					return (wm * MI * 16 + mi * 16 + gq + (e / 2) * 8) * MN + wn * NJ * 8 +
					       nj * 8 + 2 * tq + e % 2;
				};
				const int64_t tile =
					((int64_t)g * gridDim.y + blockIdx.y) * P.tiles + w / P.split;
				keep = sk_reduce<MI * NJ * 4>(&acc[0][0][0], li, ws, tickets, tile,
							      w % P.split, P.split, BM * MN);
			}
			if (keep) {
				/* bias + activation, stored as T into [n][m], then out along rows */
				__syncthreads();
				T *cs = (T *)psm;
#pragma unroll
				for (int mi = 0; mi < MI; mi++)
#pragma unroll
					for (int nj = 0; nj < NJ; nj++)
#pragma unroll
						for (int e = 0; e < 4; e++) {
							const int m = wm * MI * 16 + mi * 16 + gq + (e / 2) * 8;
							const int n = wn * NJ * 8 + nj * 8 + 2 * tq + e % 2;
							float v = acc[mi][nj][e];
							if (epi && n0 + n < d.kpg)
								v = cu_act(act, v + bias[g * d.kpg + n0 + n]);
							cs[n * CS + m] = cu_from_f<T>(v);
						}
				__syncthreads();
				if (P.vec_out) {
					/* rows of 8 outputs as 16-byte stores (tw and ow multiples
					 * of 8: a vector is all inside the row or all past it) */
					const int tv = P.tw / 8, rv = P.th * tv;
					for (int v = tid; v < MN * rv; v += MT) {
						const int n = v / rv, rem = v - n * rv, ty = rem / tv;
						const int tx = (rem - ty * tv) * 8, oy = tl.oy0 + ty;
						if (n0 + n >= d.kpg || oy >= d.oh || tl.ox0 + tx >= d.ow)
							continue;
						T *yr = y + (((int64_t)tl.nn * d.k + g * d.kpg + n0 + n) * d.oh + oy) *
								    d.ow;
						*(uint4 *)(yr + tl.ox0 + tx) = *(const uint4 *)(cs + n * CS + ty * P.tw + tx);
					}
				} else {
					for (int rr = warp; rr < MN * P.th; rr += MT / 32) {
						const int n = rr / P.th, ty = rr - n * P.th, oy = tl.oy0 + ty;
						if (n0 + n >= d.kpg || oy >= d.oh)
							continue;
						T *yr = y + (((int64_t)tl.nn * d.k + g * d.kpg + n0 + n) * d.oh + oy) *
								    d.ow;
						for (int tx = lane; tx < P.tw && tl.ox0 + tx < d.ow; tx += 32)
							yr[tl.ox0 + tx] = cs[n * CS + ty * P.tw + tx];
					}
				}
			}
		}
		if (nw >= P.items)
			break;
		w = nw;
		ci = nci;
		cb = ncb;
		ce = nce;
		tl = ntl;
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
		auto li = [&](int i) { return (ty * 4 + i / 4) * IG_BN + tx * 4 + i % 4; };
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

/* The implicit GEMM's launch, a function of the shape, dtype and the
 * plan's split_k only (cu_conv_ws_size and the launch agree on it):
 * fp16/bf16 on the tensor-core kernel: BM 128 or 32 rows, the larger
 * whose tiles give at least two blocks an SM (else the one with the most
 * tiles: at n = 1, 56 x 56, BM 32 as 28-pixel tiles, 112 blocks), each tile
 * th x tw with the least padded work; CK 64 channels a chunk when the group
 * has at least 48 and K is not split, else 16 (a split then parts the
 * chunks); shared memory at most M_SMEM, so that two blocks fit an SM.
 * A shape that does not fit (over 36 taps) and fp32 take the FFMA kernel.
 * The split S: the plan's split_k clamped to the chunks (FFMA: K steps), 1
 * when 0 on the tensor-core kernel: there an automatic split for about four
 * blocks an SM at n = 1 on the H200 ran slower than none (47.1 against 40.3
 * us in fp16, on the tensor-core kernel before this one). The FFMA kernel,
 * at 0, splits a grid of fewer tiles than SMs to about IF_SPLIT_PER_SM
 * blocks an SM (at least 4 K steps a part). */
#define M_SMEM (110 * 1024)
#ifndef IF_SPLIT_PER_SM
/* the FFMA default split's blocks an SM: at n = 1, 56 x 56 (49 tiles) on
 * the H200, 2 (split 5) ran 45.3 us, 3 (split 8) 42.8 us, 4 (split 9)
 * 44.4 us, in one session against cuDNN's 31.2 */
#define IF_SPLIT_PER_SM 3
#endif
struct ig_shape {
	int mma, bm, wmw, ck, split;
	struct mplan P;
	size_t smem;
	unsigned gx, gy, gz;
	int64_t tiles; /* all tiles: per (group, n tile) times gy * gz */
};

static void ig_shape_of(const struct cdims &cd, int es, int split_req, int sms, struct ig_shape *sh)
{
	const int64_t M = (int64_t)cd.n * cd.oh * cd.ow;
	const int RS = cd.r * cd.s, Kg = cd.cpg * RS;
	memset(sh, 0, sizeof *sh);
	sh->gy = (unsigned)((cd.kpg + MN - 1) / MN);
	sh->gz = (unsigned)cd.groups;
	if (es == 2) {
		static const int bms[2] = { 128, 32 };
		const int cks[2] = { split_req <= 1 && cd.cpg >= 48 ? 64 : 16, 16 };
		for (int ki = 0; ki < 2 && !sh->mma; ki++) {
			const int ck = cks[ki], ckw = ck == 64 ? 64 : ck + 8;
			const size_t wbytes = (size_t)MN * RS * ckw * 2;
			int64_t best_blocks = -1;
			for (int bi = 0; bi < 2; bi++) {
				const int bm = bms[bi];
				int bth = 0, btw = 0;
				int64_t bt = 0;
				size_t bsm = 0;
				for (int tw = 1; tw <= bm && tw <= cd.ow; tw++) {
					const int th = bm / tw < cd.oh ? bm / tw : cd.oh;
					const int pph = (th - 1) * cd.sh + (cd.r - 1) * cd.dh + 1;
					const int ppw = (tw - 1) * cd.sw + (cd.s - 1) * cd.dw + 1;
					if (pph >= 1024 || ppw >= 4096) /* m_group_pack's fields */
						continue;
					size_t buf = (size_t)pph * ppw * (ck + 8);
					if (buf < (size_t)MN * (bm + 8))
						buf = (size_t)MN * (bm + 8);
					const size_t smem = wbytes + buf * 2;
					if (smem > M_SMEM)
						continue;
					const int64_t t = (int64_t)cd.n * ((cd.oh + th - 1) / th) *
							  ((cd.ow + tw - 1) / tw);
					if (!bth || t <= bt) {
						bth = th;
						btw = tw;
						bt = t;
						bsm = smem;
					}
				}
				if (!bth)
					continue;
				const int64_t blocks = bt * sh->gy * sh->gz;
				/* the largest BM with two blocks an SM, else the most blocks */
				if (best_blocks >= 2 * (int64_t)sms)
					break;
				if (blocks <= best_blocks)
					continue;
				best_blocks = blocks;
				sh->mma = 1;
				sh->bm = bm;
				sh->wmw = bm == 128 ? 4 : 2;
				sh->ck = ck;
				sh->smem = bsm;
				struct mplan *P = &sh->P;
				P->th = bth;
				P->tw = btw;
				P->pph = (bth - 1) * cd.sh + (cd.r - 1) * cd.dh + 1;
				P->ppw = (btw - 1) * cd.sw + (cd.s - 1) * cd.dw + 1;
				P->pp = P->pph * P->ppw;
				P->tpr = (cd.ow + btw - 1) / btw;
				P->tpi = P->tpr * ((cd.oh + bth - 1) / bth);
				P->tiles = (int)bt;
				P->nch = (cd.cpg + ck - 1) / ck;
			}
		}
	}
	if (sh->mma) {
		struct mplan *P = &sh->P;
		int S = split_req > 0 ? split_req : 1;
		if (S > P->nch)
			S = P->nch;
		P->split = S;
		P->items = P->tiles * S;
		P->resident = P->nch == 1 && S == 1;
		P->vec_out = P->tw % 8 == 0 && cd.ow % 8 == 0;
		sh->split = S;
		sh->gx = (unsigned)P->items;
		sh->tiles = (int64_t)P->tiles * sh->gy * sh->gz;
		return;
	}
	const int steps = (Kg + IF_BK - 1) / IF_BK;
	sh->bm = IG_BM;
	sh->gx = (unsigned)((M + IG_BM - 1) / IG_BM);
	sh->tiles = (int64_t)sh->gx * sh->gy * sh->gz;
	int S = split_req > 0 ? split_req : 1;
	if (split_req == 0 && sh->tiles < sms) {
		/* the operator's default: too few tiles for the SMs (fp32 at
		 * n = 1, 56 x 56: 49 tiles of 64 rows, one 8-warp block each on
		 * 49 of 132 SMs, every K step's loads waited out) are split to
		 * about IF_SPLIT_PER_SM blocks an SM, each part at least 4 K
		 * steps */
		S = (int)(IF_SPLIT_PER_SM * (int64_t)sms / sh->tiles);
		if (S > steps / 4)
			S = steps / 4;
		if (S < 1)
			S = 1;
	}
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

/* The packed weights of the tensor-core kernel: a chunk image a (group,
 * tile of 64 output channels, chunk). */
static size_t cu_wpk_bytes(const struct cdims &cd, const struct ig_shape &sh)
{
	const size_t ckw = sh.ck == 64 ? 64 : (size_t)sh.ck + 8;
	return (size_t)sh.gz * sh.gy * sh.P.nch * MN * cd.r * cd.s * ckw * 2;
}

int cu_conv_prepare(cudaStream_t s, const struct ops_workload *w, const struct ops_plan *p,
		    int sms, const void *wt, struct cu_conv_ws *ws, struct opr_error *err)
{
	struct ops_conv_dims d;
	struct cdims cd;
	struct ig_shape sh;
	int rc;

	if (p->strategy != OPS_STRAT_IM2COL || ops_dtype_size(w->dtype) != 2)
		return 0;
	if ((rc = ops_conv_dims_get(w, &d, err)) < 0)
		return rc;
	cdims_of(&d, &cd);
	ig_shape_of(cd, 2, p->split_k, sms, &sh);
	if (!sh.mma)
		return 0;
	const size_t bytes = cu_wpk_bytes(cd, sh);
	CU_TRY(cudaMalloc((void **)&ws->wpk, bytes), "cudaMalloc (packed conv weights)");
	ws->wpk_bytes = bytes;
	const int64_t total = (int64_t)(bytes / 2);
	int64_t blocks = (total + 255) / 256;
	if (blocks > 65536)
		blocks = 65536;
	if (sh.ck == 64)
		k_conv_wpack<64><<<(unsigned)blocks, 256, 0, s>>>((const unsigned short *)wt, ws->wpk,
								  cd, (int)sh.gy, sh.P.nch, total);
	else
		k_conv_wpack<16><<<(unsigned)blocks, 256, 0, s>>>((const unsigned short *)wt, ws->wpk,
								  cd, (int)sh.gy, sh.P.nch, total);
	CU_LAUNCHED("conv2d weight packing kernel");
	CU_TRY(cudaStreamSynchronize(s), "conv2d weight packing");
	return 0;
}

/* Launches the tensor-core kernel of sh on a persistent grid: at most the
 * blocks the SMs hold at once (the occupancy, asked once per kernel). */
template <typename T, int BM, int WMW, int CK>
static int mma_launch(cudaStream_t s, const struct cdims &cd, const struct ig_shape &sh,
		      const T *x, const unsigned short *wpk, const float *bias, T *y, int epi, int act,
		      int sms, float *wsp, unsigned *tk, unsigned *gx, struct opr_error *err)
{
	static int occ = 0; /* blocks an SM at M_SMEM, set with the attribute once */
	auto kern = k_conv_igemm_mma<T, BM, WMW, CK>;
	if (!occ) {
		CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, M_SMEM),
		       "shared memory attribute");
		int o = 0;
		CU_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o, kern, MT, M_SMEM),
		       "occupancy");
		occ = o < 1 ? 1 : o;
	}
	const int64_t cap = (int64_t)occ * sms / ((int64_t)sh.gy * sh.gz);
	unsigned g = sh.gx;
	if (cap >= 1 && (int64_t)g > cap) {
		/* as many blocks as the longest block's items need, no more: every
		 * block the SMs hold (n = 32: 264, at most 7 tiles an SM instead
		 * of 8 on 224) measured 94.1 against 92.3 us in fp16 on the H200 */
		const int64_t per = ((int64_t)g + cap - 1) / cap;
		g = (unsigned)(((int64_t)g + per - 1) / per);
	}
	*gx = g;
	kern<<<dim3(g, sh.gy, sh.gz), MT, sh.smem, s>>>(x, wpk, bias, y, cd, sh.P, epi, act, wsp, tk);
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
	if constexpr (sizeof(T) == 2) {
		if (sh.mma) {
			unsigned gx = 0;
			int rc = 0;
			if (!ws || !ws->wpk || ws->wpk_bytes < cu_wpk_bytes(cd, sh))
				return opr_error_set(err, OPR_EINTERNAL,
						     "conv2d tensor-core kernel without its packed weights");
			const unsigned short *wpk = ws->wpk;
#define L_MMA(BM, WMW, CK)                                                                \
	rc = mma_launch<T, BM, WMW, CK>(s, cd, sh, x, wpk, bias, y, epi, act, sms, wsp, tk, &gx, err)
			if (sh.bm == 128)
				sh.ck == 64 ? L_MMA(128, 4, 64) : L_MMA(128, 4, 16);
			else
				sh.ck == 64 ? L_MMA(32, 2, 64) : L_MMA(32, 2, 16);
#undef L_MMA
			if (rc < 0)
				return rc;
			if (shape)
				snprintf(shape, shape_len,
					 "conv_igemm_mma ldmatrix m16n8k16 grid %ux%ux%u block %d tile %dx%d "
					 "(%d rows) x64 chunk %d split_k %d items %d smem %zu%s",
					 gx, sh.gy, sh.gz, MT, sh.P.th, sh.P.tw, sh.bm, sh.ck, sh.split,
					 sh.P.items, sh.smem, sh.P.resident ? " weights resident" : "");
			CU_LAUNCHED("conv2d implicit GEMM kernel");
			return 0;
		}
	}
	dim3 g(sh.gx, sh.gy, sh.gz * (unsigned)sh.split);
	k_conv_igemm_ffma<T><<<g, 256, 0, s>>>(x, wt, bias, y, cd, epi, act, sh.split, wsp, tk);
	if (shape)
		snprintf(shape, shape_len,
			 "conv_igemm_ffma grid %ux%ux%u block 256 tile 64x64x16 split_k %d", g.x, g.y,
			 g.z, sh.split);
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
	if (p->strategy == OPS_STRAT_WINOGRAD) /* the planner offers none here (ops.h) */
		return opr_error_set(err, OPR_ELIMIT, "conv2d: the cuda op set has no winograd kernel");
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
