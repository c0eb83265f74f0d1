/* ops/cuda/qgemm.cu: the INT8 quantised GEMM on the GPU for small M/N and
 * large K: exact dp4a accumulation (int32 per K tile, widened to int64),
 * split-K across SMs through an int64 accumulator in HBM, and the epilogues
 * (dequantise + bias + activation, requantise), fused into the GEMM kernel
 * or as kernels of their own. A [m,k] (u8 or s8) and B [n,k] (s8) are
 * row-major with K contiguous, as on the host. Units: elements, bytes. */
#include "cuda_int.h"

#include <stdio.h>

#define QG_RG 8     /* rows of A per register tile */
#define QG_CW 4     /* columns per warp */
#define QG_WARPS 16 /* so tile_n <= 64 on the GPU */
#define QG_THREADS (32 * QG_WARPS)
#ifndef QG_PF
#define QG_PF 1     /* steps (512 bytes of K a warp) prefetched ahead into L1 */
#endif

__device__ __forceinline__ void qg_prefetch(const void *p)
{
	asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
}

static_assert(QG_CW * QG_RG == 32 && QG_CW == 4, "xstep's reduce-scatter assumes 32 sums and 4 columns a warp");

enum { QG_MODE_ACC = 0, QG_MODE_DEQUANT = 1, QG_MODE_REQUANT = 2 };

struct qg_args {
	const uint8_t *a;
	const int8_t *b;
	int64_t m, n, k;
	int32_t zp;
	int64_t tn, kk, ntk, parts;
	int vec;
	unsigned long long *gacc;
	unsigned *tickets;
	int mode;
	void *out;
	int accb;
	const float *scale;
	int per_channel;
	const float *bias;
	int act;
	double a_scale, out_scale;
	int out_zp;
	long long *acc_check;
};

/* d = c + sum of the four byte products of a and b; a's bytes unsigned (u8
 * A) or signed, b's signed. Exact in int32 within a K tile (qgemm_int.h). */
template <int ASIGNED> __device__ __forceinline__ int dp4(int a, int b, int c)
{
	int d;
	if (ASIGNED)
		asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
	else
		asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
	return d;
}

/* 16 bytes of a row from q on: one vector load when the whole vector is in
 * range and aligned (full), else bytes with zeros past kt1 (a zero byte adds
 * nothing to a sum or a column sum). */
__device__ __forceinline__ int4 ld16(const void *row, int64_t q, int64_t kt1, bool full,
				     bool stream)
{
	if (full) {
		const int4 *p = reinterpret_cast<const int4 *>((const uint8_t *)row + q);
		return stream ? __ldcs(p) : __ldg(p);
	}
	unsigned w[4] = { 0, 0, 0, 0 };
	const uint8_t *p = (const uint8_t *)row;
	for (int i = 0; i < 16; i++)
		if (q + i < kt1)
			w[i / 4] |= (unsigned)p[q + i] << (8 * (i % 4));
	return make_int4((int)w[0], (int)w[1], (int)w[2], (int)w[3]);
}

/* One step of a warp reduce-scatter over 2N values: a lane with bit `off`
 * of its index set keeps the upper N, its partner the lower N, and each adds
 * the partner's copy of the half it keeps. Indices stay compile-time (a
 * select, not a register array indexed at run time). */
template <int N> __device__ __forceinline__ void xstep(int *v, int off, int lane)
{
	const bool up = (lane & off) != 0;
#pragma unroll
	for (int i = 0; i < N; i++) {
		const int mine = up ? v[N + i] : v[i];
		const int other = up ? v[i] : v[N + i];
		v[i] = mine + __shfl_xor_sync(0xffffffffu, other, off);
	}
}

/* The epilogue of one accumulator: element (i, j) of y. */
__device__ __forceinline__ void qg_epi(const qg_args &q, int64_t i, int64_t j, long long v)
{
	const int64_t e = i * q.n + j;
	if (q.acc_check)
		q.acc_check[e] = v;
	if (q.mode == QG_MODE_ACC) {
		if (q.accb == 4)
			((int *)q.out)[e] = (int)v;
		else
			((long long *)q.out)[e] = v;
		return;
	}
	const double bs = (double)q.scale[q.per_channel ? j : 0];
	/* the host's expressions, in the same order (IEEE double on both) */
	if (q.mode == QG_MODE_DEQUANT) {
		float y = (float)(q.a_scale * bs * (double)v);
		if (q.bias)
			y = y + q.bias[j];
		if (q.act != OPS_ACT_NONE)
			y = cu_act(q.act, y);
		((float *)q.out)[e] = y;
	} else {
		double r = rint(q.a_scale * bs * (double)v / q.out_scale) + q.out_zp;
		((int8_t *)q.out)[e] = (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
	}
}

/* A block's place in the grid: n tile jt (columns [j0, j0 + w)), the K
 * range [kb, ke) of its split-K part's K tiles ([part*ntk/parts,
 * (part+1)*ntk/parts), the plan's split), its warp and lane, and the B rows
 * of the warp's 4 columns (NULL past w). */
struct qg_block {
	int64_t jt, j0, w, kb, ke;
	int cw, lane;
	const int8_t *brow[QG_CW];
};

__device__ __forceinline__ qg_block qg_block_of(const qg_args &q)
{
	qg_block b;
	const int64_t part = blockIdx.y;
	const int64_t tb = part * q.ntk / q.parts, te = (part + 1) * q.ntk / q.parts;
	b.jt = blockIdx.x;
	b.j0 = b.jt * q.tn;
	b.w = q.n - b.j0 < q.tn ? q.n - b.j0 : q.tn;
	b.kb = tb * q.kk;
	b.ke = te * q.kk < q.k ? te * q.kk : q.k;
	b.cw = threadIdx.x / 32;
	b.lane = threadIdx.x % 32;
#pragma unroll
	for (int c = 0; c < QG_CW; c++) {
		const int64_t col = b.cw + QG_WARPS * c;
		b.brow[c] = col < b.w ? q.b + (b.j0 + col) * q.k : NULL;
	}
	return b;
}

__device__ __forceinline__ void qg_zero(int acc[QG_CW][QG_RG], int cs[QG_CW])
{
#pragma unroll
	for (int c = 0; c < QG_CW; c++) {
		cs[c] = 0;
#pragma unroll
		for (int r = 0; r < QG_RG; r++)
			acc[c][r] = 0;
	}
}

__device__ __forceinline__ void qg_sacc_zero(unsigned long long sacc[QG_RG][QG_WARPS * QG_CW])
{
	for (int e = threadIdx.x; e < QG_RG * QG_WARPS * QG_CW; e += blockDim.x)
		(&sacc[0][0])[e] = 0;
}

/* One step of a lane: its 16 bytes of K of the 8 A rows against its 4 B
 * columns (32 int32 sums) and the 4 columns' byte sums (for the zero point). */
template <int ASIGNED>
__device__ __forceinline__ void qg_dot_step(const int4 av[QG_RG], const int4 bv[QG_CW],
					    int acc[QG_CW][QG_RG], int cs[QG_CW])
{
#pragma unroll
	for (int c = 0; c < QG_CW; c++) {
#pragma unroll
		for (int r = 0; r < QG_RG; r++) {
			int x = acc[c][r];
			x = dp4<ASIGNED>(av[r].x, bv[c].x, x);
			x = dp4<ASIGNED>(av[r].y, bv[c].y, x);
			x = dp4<ASIGNED>(av[r].z, bv[c].z, x);
			x = dp4<ASIGNED>(av[r].w, bv[c].w, x);
			acc[c][r] = x;
		}
		int x = cs[c];
		x = dp4<1>(0x01010101, bv[c].x, x);
		x = dp4<1>(0x01010101, bv[c].y, x);
		x = dp4<1>(0x01010101, bv[c].z, x);
		x = dp4<1>(0x01010101, bv[c].w, x);
		cs[c] = x;
	}
}

/* The reduce-scatter of a warp's 32 sums and 4 column sums (xstep) and the
 * widening of the one sum each lane then holds into the block's int64
 * accumulators, sum (a - zp) b = sum a b - zp sum b; acc and cs are zeroed
 * for the next chunk. */
__device__ __forceinline__ void qg_widen(const qg_args &q, int acc[QG_CW][QG_RG], int cs[QG_CW],
					 unsigned long long sacc[QG_RG][QG_WARPS * QG_CW], int cw,
					 int lane, int64_t w, int64_t r0)
{
	int v[QG_CW * QG_RG];
#pragma unroll
	for (int c = 0; c < QG_CW; c++)
#pragma unroll
		for (int r = 0; r < QG_RG; r++) {
			v[c * QG_RG + r] = acc[c][r];
			acc[c][r] = 0;
		}
	xstep<16>(v, 16, lane);
	xstep<8>(v, 8, lane);
	xstep<4>(v, 4, lane);
	xstep<2>(v, 2, lane);
	xstep<1>(v, 1, lane);
	xstep<2>(cs, 16, lane);
	xstep<1>(cs, 8, lane);
	int csum = cs[0];
	csum += __shfl_xor_sync(0xffffffffu, csum, 4);
	csum += __shfl_xor_sync(0xffffffffu, csum, 2);
	csum += __shfl_xor_sync(0xffffffffu, csum, 1);
#pragma unroll
	for (int c = 0; c < QG_CW; c++)
		cs[c] = 0;
	const int64_t col = cw + QG_WARPS * (lane >> 3);
	const int r = lane & (QG_RG - 1);
	/* one lane of one warp owns each (row, column) */
	if (col < w && r0 + r < q.m)
		sacc[r][col] += (unsigned long long)((long long)v[0] - (long long)q.zp * csum);
}

/* Adds the block's int64 sums of rows [r0, r0 + 8) into gacc (64-bit
 * atomics: the split-K parts of an n tile meet there). */
__device__ __forceinline__ void qg_flush_rows(const qg_args &q,
					      unsigned long long sacc[QG_RG][QG_WARPS * QG_CW],
					      int64_t w, int64_t j0, int64_t r0)
{
	for (int e = threadIdx.x; e < QG_RG * w; e += blockDim.x) {
		const int r = e / (int)w, c = e % (int)w;
		if (r0 + r < q.m)
			atomicAdd(&q.gacc[(r0 + r) * q.n + j0 + c], sacc[r][c]);
	}
	__syncthreads();
}

/* The last part of n tile jt to finish (a ticket) applies the epilogue and
 * zeroes gacc and its ticket for the next launch. */
__device__ __forceinline__ void qg_finish(const qg_args &q, int64_t jt, int64_t j0, int64_t w)
{
	__shared__ int last;
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0)
		last = atomicAdd(&q.tickets[jt], 1u) == (unsigned)(q.parts - 1);
	__syncthreads();
	if (!last)
		return;
	__threadfence();
	for (int64_t e = threadIdx.x; e < q.m * w; e += blockDim.x) {
		const int64_t i = e / w, j = j0 + e % w;
		unsigned long long *g = &q.gacc[i * q.n + j];
		const long long v = (long long)__ldcg(g);
		*g = 0;
		qg_epi(q, i, j, v);
	}
	if (threadIdx.x == 0)
		q.tickets[jt] = 0;
}

/* Block (jt, part): the n tile [jt*tn, +w) over the K range of the part's
 * K tiles, [part*ntk/parts, (part+1)*ntk/parts) (the plan's split). Warp w
 * (of 16) owns columns w + 16c (c < 4) and walks the part's whole K range,
 * 16 bytes a lane and 512 a warp per step, in chunks of at most
 * OPS_QGEMM_MAX_TILE_KK (the int32 bound of qgemm_int.h): per chunk each
 * lane sums in int32, the warp reduces (xstep), and each lane widens the one
 * sum it holds, sum (a - zp) b = sum a b - zp sum b, into int64 in shared
 * memory (plain stores). The widening unit is the largest exact one, not the
 * plan's tile_kk: reducing per K tile left half of each warp idle and paid
 * the 37-shuffle reduction every 256 bytes under the planner's tile_kk 256
 * (0.21 of copy against 0.46 with tile_kk 4096); any sum of at most 65536
 * products is exact in int32, so the results are the same. Per step a lane
 * loads the 8 A rows (L1: every warp reads them) and its 4 B columns, 12
 * loads in flight, then runs the dp4a; the lines QG_PF steps ahead are
 * prefetched into L1 meanwhile (B is the HBM stream, A is shared by the
 * block's warps): with nothing ahead in flight the kernel ran at 0.46 of
 * copy; one step ahead is best (8x64x2^20 tile_kk 4096 on the H200: 35.0
 * us at QG_PF 1, 35.8 at 2, 36.7 at 3, 38.7 at 5, 40.0 at 8), and holding the next step's B in registers instead (A loaded in two
 * halves to stay under 128 registers) ran at 0.38. The block's sums go to
 * gacc with 64-bit atomics;
 * the last part to finish (ticket) applies the epilogue and zeroes gacc and
 * its ticket for the next launch. */
template <int ASIGNED>
__global__ void __launch_bounds__(QG_THREADS, 1) k_qgemm(qg_args q)
{
	__shared__ unsigned long long sacc[QG_RG][QG_WARPS * QG_CW];
	const qg_block b = qg_block_of(q);
	const int64_t jt = b.jt, j0 = b.j0, w = b.w, kb = b.kb, ke = b.ke;
	const int cw = b.cw, lane = b.lane;
	const int8_t *const *brow = b.brow;

	for (int64_t r0 = 0; r0 < q.m; r0 += QG_RG) {
		qg_sacc_zero(sacc);
		__syncthreads();
		for (int64_t c0 = kb; c0 < ke; c0 += OPS_QGEMM_MAX_TILE_KK) {
			const int64_t c1 = c0 + OPS_QGEMM_MAX_TILE_KK < ke ? c0 + OPS_QGEMM_MAX_TILE_KK : ke;
			int acc[QG_CW][QG_RG], cs[QG_CW];
			qg_zero(acc, cs);
			for (int64_t p = c0 + 16 * lane; p < c1; p += 16 * 32) {
				const bool full = q.vec && p + 16 <= c1;
				/* the step QG_PF ahead into L1: each lane its B columns,
				 * warp r < 8 A row r (the block's warps share the A lines) */
				const int64_t pf = p + QG_PF * 16 * 32;
				if (QG_PF > 0 && pf + 16 <= c1) {
#pragma unroll
					for (int c = 0; c < QG_CW; c++)
						if (brow[c])
							qg_prefetch(brow[c] + pf);
					if (cw < QG_RG && r0 + cw < q.m)
						qg_prefetch(q.a + (r0 + cw) * q.k + pf);
				}
				int4 av[QG_RG], bv[QG_CW];
#pragma unroll
				for (int r = 0; r < QG_RG; r++)
					av[r] = r0 + r < q.m ? ld16(q.a + (r0 + r) * q.k, p, c1, full, false)
							     : make_int4(0, 0, 0, 0);
#pragma unroll
				for (int c = 0; c < QG_CW; c++)
					bv[c] = brow[c] ? ld16(brow[c], p, c1, full, false) : make_int4(0, 0, 0, 0);
				qg_dot_step<ASIGNED>(av, bv, acc, cs);
			}
			/* reduce-scatter across the warp: 32 sums and 4 column sums in
			 * 31 + 6 shuffles (a warp_sum each would take 180) */
			qg_widen(q, acc, cs, sacc, cw, lane, w, r0);
		}
		__syncthreads();
		qg_flush_rows(q, sacc, w, j0, r0);
	}
	qg_finish(q, jt, j0, w);
}

/* The same GEMM with A and B staged through shared memory by cp.async, in
 * QGP_S stages of 512 bytes of K (8 A rows and the tile's 64 B columns:
 * 36 KiB a stage), for rows and K ranges in 16-byte units (q.vec). Why: the
 * register loads of k_qgemm keep about one step (32 KiB of B an SM) in
 * flight, at about half the copy's rate; cp.async holds QGP_S - 1 steps in
 * flight without registers. Thread t copies column (t / 32) + 16 i and bytes
 * 16 (t % 32) of each stage: exactly what it reads back, so the B copies
 * need no barrier; the A rows, copied by warps 0-7 and read by all, do (one
 * __syncthreads a step, which also frees the stage refilled next). On the
 * H200, 8x64x2^20 at tile_kk 4096: register loads 35.7 us; cp.async.cg with
 * 2, 3, 4, 5, 6 stages 35.3, 29.9, 31.2, 33.7, 34.3 us; cp.async.ca with 3
 * and 4 stages 28.8 and 29.6 us. Deeper pipelines lose: with 16 steps a
 * block they are mostly prologue, and 132 SMs with 5 steps of 64 column
 * runs each in flight only queue longer at the HBM. .ca rather than .cg:
 * with .cg the L2 counted twice the sectors the SMs asked for
 * (lts__t_sectors_srcunit_tex_op_read 2.0x the bytes of A and B; 1.0000
 * with .ca and with k_qgemm's loads). */
#define QGP_S 3
#define QGP_STEP 512
#define QGP_B_BYTES (QG_WARPS * QG_CW * QGP_STEP)
#define QGP_A_BYTES (QG_RG * QGP_STEP)
#define QGP_STAGE (QGP_B_BYTES + QGP_A_BYTES)
#define QGP_SMEM (QGP_S * QGP_STAGE)

__device__ __forceinline__ void qgp_copy16(unsigned char *dst, const void *src, bool in_range)
{
	if (in_range) {
		const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
		asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src));
	} else {
		*reinterpret_cast<int4 *>(dst) = make_int4(0, 0, 0, 0);
	}
}

/* Issues the copies of step st (K bytes [kb + 512 st, +512)) into its
 * stage, then commits a group (an empty one past the range, so that the
 * group count stays one a step). */
__device__ __forceinline__ void qgp_issue(const qg_args &q, unsigned char *smem,
					  const int8_t *const brow[QG_CW], int64_t r0, int64_t kb,
					  int64_t ke, int64_t st, int64_t nsteps, int cw, int lane)
{
	if (st < nsteps) {
		unsigned char *sb = smem + (st % QGP_S) * QGP_STAGE;
		const int64_t kq = kb + st * QGP_STEP + 16 * lane;
		const bool kin = kq < ke;
#pragma unroll
		for (int c = 0; c < QG_CW; c++)
			qgp_copy16(sb + (cw + QG_WARPS * c) * QGP_STEP + 16 * lane,
				   brow[c] + kq, kin && brow[c]);
		if (cw < QG_RG)
			qgp_copy16(sb + QGP_B_BYTES + cw * QGP_STEP + 16 * lane,
				   q.a + (r0 + cw) * q.k + kq, kin && r0 + cw < q.m);
	}
	asm volatile("cp.async.commit_group;" ::: "memory");
}

template <int ASIGNED>
__global__ void __launch_bounds__(QG_THREADS, 1) k_qgemm_pipe(qg_args q)
{
	extern __shared__ __align__(16) unsigned char qgp_smem[];
	__shared__ unsigned long long sacc[QG_RG][QG_WARPS * QG_CW];
	const qg_block b = qg_block_of(q);
	const int64_t jt = b.jt, j0 = b.j0, w = b.w, kb = b.kb, ke = b.ke;
	const int cw = b.cw, lane = b.lane;
	const int8_t *const *brow = b.brow;
	const int64_t nsteps = ke > kb ? (ke - kb + QGP_STEP - 1) / QGP_STEP : 0;
	/* steps a chunk: the int32 bound of qgemm_int.h, a whole number of steps */
	const int64_t chunk_steps = OPS_QGEMM_MAX_TILE_KK / QGP_STEP;
	static_assert(OPS_QGEMM_MAX_TILE_KK % QGP_STEP == 0, "chunks of whole steps");

	for (int64_t r0 = 0; r0 < q.m; r0 += QG_RG) {
		qg_sacc_zero(sacc);
		for (int64_t st = 0; st < QGP_S - 1; st++)
			qgp_issue(q, qgp_smem, brow, r0, kb, ke, st, nsteps, cw, lane);
		int acc[QG_CW][QG_RG], cs[QG_CW];
		qg_zero(acc, cs);
		for (int64_t st = 0; st < nsteps; st++) {
			asm volatile("cp.async.wait_group %0;" ::"n"(QGP_S - 2) : "memory");
			__syncthreads();
			qgp_issue(q, qgp_smem, brow, r0, kb, ke, st + QGP_S - 1, nsteps, cw, lane);
			const unsigned char *sb = qgp_smem + (st % QGP_S) * QGP_STAGE;
			int4 av[QG_RG], bv[QG_CW];
#pragma unroll
			for (int r = 0; r < QG_RG; r++)
				av[r] = *reinterpret_cast<const int4 *>(sb + QGP_B_BYTES + r * QGP_STEP + 16 * lane);
#pragma unroll
			for (int c = 0; c < QG_CW; c++)
				bv[c] = *reinterpret_cast<const int4 *>(sb + (cw + QG_WARPS * c) * QGP_STEP + 16 * lane);
			qg_dot_step<ASIGNED>(av, bv, acc, cs);
			if ((st + 1) % chunk_steps == 0 || st + 1 == nsteps)
				qg_widen(q, acc, cs, sacc, cw, lane, w, r0);
		}
		asm volatile("cp.async.wait_group 0;" ::: "memory");
		__syncthreads();
		qg_flush_rows(q, sacc, w, j0, r0);
	}
	qg_finish(q, jt, j0, w);
}

/* The unfused epilogue stages: accumulators (accb bytes) to y, one element
 * per thread. */
__global__ void __launch_bounds__(256) k_qg_stage(qg_args q, const void *acc)
{
	for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < q.m * q.n;
	     e += (int64_t)gridDim.x * blockDim.x) {
		long long v = q.accb == 4 ? (long long)((const int *)acc)[e] : ((const long long *)acc)[e];
		qg_args s = q;
		s.acc_check = NULL;
		qg_epi(s, e / q.n, e % q.n, v);
	}
}

int cu_qgemm_run(cudaStream_t s, const struct cu_qgemm *c, int fused, char *shape,
		 size_t shape_len, int *launches, struct opr_error *err)
{
	const struct ops_workload *w = c->w;
	const int fused_group = w->group == OPS_G_QGEMM_DQ_BIAS_ACT;
	const int requant = w->quant.out == OPS_S8;
	qg_args q;
	int rc;

	memset(&q, 0, sizeof q);
	q.a = (const uint8_t *)c->a;
	q.b = c->b;
	q.m = w->gemm.m;
	q.n = w->gemm.n;
	q.k = w->gemm.k;
	q.zp = w->quant.a_zero_point;
	q.tn = c->t.tn;
	q.kk = c->t.kk;
	q.ntk = c->t.ntk;
	q.parts = c->t.parts;
	q.vec = q.k % 16 == 0 && q.kk % 16 == 0;
	q.gacc = (unsigned long long *)c->gacc;
	q.tickets = c->tickets;
	q.accb = c->accb;
	q.scale = c->scale;
	q.per_channel = w->quant.b_per_channel;
	q.a_scale = c->a_scale;
	q.out_scale = c->out_scale;
	q.out_zp = w->quant.out_zero_point;
	q.acc_check = c->acc_check;
	q.act = OPS_ACT_NONE;
	if (q.tn > QG_CW * QG_WARPS)
		return opr_error_set(err, OPR_ELIMIT,
				     "qgemm tile_n %lld exceeds the GPU kernel's 64 columns per block",
				     (long long)q.tn);
	/* one launch: the plain group, or the fused group fused */
	const int one = !fused_group || fused;
	if (one) {
		q.mode = requant ? QG_MODE_REQUANT : QG_MODE_DEQUANT;
		q.out = c->y;
		if (fused_group && !requant) {
			q.bias = c->bias;
			q.act = w->act;
		}
	} else {
		q.mode = QG_MODE_ACC;
		q.out = c->acc_out;
	}
	dim3 grid((unsigned)c->t.ntn, (unsigned)c->t.parts), block(QG_THREADS);
	if (c->t.parts > 65535)
		return opr_error_set(err, OPR_ELIMIT, "qgemm split_k %lld exceeds grid y",
				     (long long)c->t.parts);
	/* the staged kernel where rows and K tiles are 16-byte units (cp.async
	 * moves aligned 16-byte runs), else register loads */
	const int pipe = q.vec;
	if (pipe) {
		static int attr_set;
		if (!attr_set) {
			CU_TRY(cudaFuncSetAttribute(k_qgemm_pipe<0>, cudaFuncAttributeMaxDynamicSharedMemorySize,
						    QGP_SMEM), "shared memory attribute");
			CU_TRY(cudaFuncSetAttribute(k_qgemm_pipe<1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
						    QGP_SMEM), "shared memory attribute");
			attr_set = 1;
		}
		if (w->quant.a == OPS_S8)
			k_qgemm_pipe<1><<<grid, block, QGP_SMEM, s>>>(q);
		else
			k_qgemm_pipe<0><<<grid, block, QGP_SMEM, s>>>(q);
	} else if (w->quant.a == OPS_S8) {
		k_qgemm<1><<<grid, block, 0, s>>>(q);
	} else {
		k_qgemm<0><<<grid, block, 0, s>>>(q);
	}
	CU_LAUNCHED("qgemm kernel");
	*launches += 1;
	if (shape)
		snprintf(shape, shape_len, "qgemm%s<%s> grid %ux%u block %d tile_n %lld tile_kk %lld parts %lld",
			 pipe ? "_cp.async" : "", ops_dtype_name(w->quant.a), grid.x, grid.y, QG_THREADS, (long long)q.tn,
			 (long long)q.kk, (long long)q.parts);
	if (one)
		return 0;
	/* unfused: dequantise (or requantise), then bias, then activation, each
	 * a kernel reading and writing HBM */
	int64_t mn = q.m * q.n, blocks = (mn + 255) / 256;
	dim3 g2((unsigned)(blocks < 65536 ? blocks : 65536)), b2(256);
	q.mode = requant ? QG_MODE_REQUANT : QG_MODE_DEQUANT;
	q.out = c->y;
	q.bias = NULL;
	q.act = OPS_ACT_NONE;
	k_qg_stage<<<g2, b2, 0, s>>>(q, c->acc_out);
	CU_LAUNCHED("qgemm epilogue kernel");
	*launches += 1;
	if (requant)
		return 0;
	if ((rc = cu_bias_add(s, OPS_F32, c->y, c->bias, mn, 1, q.n, err)) < 0)
		return rc;
	*launches += 1;
	if (w->act == OPS_ACT_NONE)
		return 0;
	if ((rc = cu_act_contig(s, w->act, OPS_F32, c->y, c->y, mn, 0, 1, NULL, 0, err)) < 0)
		return rc;
	*launches += 1;
	return 0;
}
