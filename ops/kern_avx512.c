/* ops/kern_avx512.c: the AVX-512 path (F, BW, VL, DQ) of the host kernel
 * families: 16-lane fp32 activations (the shared math of kern_act.h), a 12
 * x 32 direct conv kernel and a 6 x 32 GEMM kernel on FMA with embedded
 * broadcasts, the exact int8 GEMM by vpdpbusd (VNNI, compiled for it alone:
 * a CPU without VNNI runs the rest of this table, ops/isa.c), streamed
 * 64-byte stores, and 16-lane fp16/bf16 conversions. The whole file is
 * compiled for that ISA by the pragma below, whatever the build flags;
 * ops/isa.c reaches it only on a host that has it. */
#include "isa_int.h"
#include "qgemm_int.h"

#include <immintrin.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
#endif

#include "kern_avx512_inl.h"

/* ---- activations: the shared math (kern_act.h) on 16 lanes --------------------- */

#define VF __m512
#define VI __m512i
#define VM __mmask16
#define V1(c) _mm512_set1_ps(c)
#define VADD _mm512_add_ps
#define VSUB _mm512_sub_ps
#define VMUL _mm512_mul_ps
#define VDIV _mm512_div_ps
#define VMIN _mm512_min_ps
#define VMAX _mm512_max_ps
#define VFMA _mm512_fmadd_ps
#define VFNMA _mm512_fnmadd_ps
#define VROUND(a) _mm512_roundscale_ps((a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VABS(a) _mm512_andnot_ps(V1(-0.0f), (a))
#define VSIGN(a) _mm512_and_ps(V1(-0.0f), (a))
#define VOR _mm512_or_ps
#define VCVTI _mm512_cvtps_epi32
#define VPOW2(n) _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32((n), \
				       _mm512_set1_epi32(127)), 23))
#define VHALF(n) _mm512_srai_epi32((n), 1)
#define VISUB _mm512_sub_epi32
#define VEQ(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_EQ_OQ)
#define VGE(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GE_OQ)
#define VLT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_LT_OQ)
#define VSEL(m, a, b) _mm512_mask_blend_ps((m), (a), (b))
#include "kern_act.h"

/* ---- Winograd F(4x4, 3x3): the shared kernels (kern_wino.h) on 16 lanes ---- */
#define VL 16
#define VLD(p) _mm512_loadu_ps(p)
#define VST(p, v) _mm512_storeu_ps((p), (v))
#define VBC(p) _mm512_set1_ps(*(p))
#define VZERO _mm512_setzero_ps()
#define WG_BP 6
#define WG_BK 4
#define WG_NAME(x) avx512_##x
#include "kern_wino.h"

static inline __mmask16 tail_mask(size_t m)
{
	return (__mmask16)((1u << m) - 1u);
}

/* One pass of f over n floats, 16 at a time; the tail through a masked load
 * (the other lanes read as 0, never touched in memory) and a masked store. */
ALWAYS_INLINE void map16(__m512 (*f)(__m512), const float *x, float *y, size_t n)
{
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		_mm_prefetch((const char *)((uintptr_t)(x + i) + ACT_PF * sizeof *x), _MM_HINT_T0);
		_mm512_storeu_ps(y + i, f(_mm512_loadu_ps(x + i)));
	}
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		_mm512_mask_storeu_ps(y + i, m, f(_mm512_maskz_loadu_ps(m, x + i)));
	}
}

/* map16 with y's whole 64-byte lines written by non-temporal stores (the
 * head up to y's alignment and the tail through map16). The caller fences. */
ALWAYS_INLINE void map16_stream(__m512 (*f)(__m512), const float *x, float *y, size_t n)
{
	size_t head = (((size_t)64 - ((uintptr_t)y & 63)) & 63) / sizeof *y;
	if (((uintptr_t)y & (sizeof *y - 1)) || head > n) {
		map16(f, x, y, n);
		return;
	}
	map16(f, x, y, head);
	size_t i = head;
	for (; i + 16 <= n; i += 16)
		_mm512_stream_ps(y + i, f(_mm512_loadu_ps(x + i)));
	map16(f, x + i, y + i, n - i);
}

static void map_relu(const float *x, float *y, size_t n)
{
	/* memory-bound: four vectors per iteration keep more loads in flight */
	size_t i = 0;
	for (; i + 64 <= n; i += 64) {
		__m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
		__m512 c = _mm512_loadu_ps(x + i + 32), d = _mm512_loadu_ps(x + i + 48);
		_mm512_storeu_ps(y + i, v_relu(a));
		_mm512_storeu_ps(y + i + 16, v_relu(b));
		_mm512_storeu_ps(y + i + 32, v_relu(c));
		_mm512_storeu_ps(y + i + 48, v_relu(d));
	}
	map16(v_relu, x + i, y + i, n - i);
}

#define ACT_EXP_CASES(map, x, y, n)              \
	case OPS_ACT_GELU_ERF:                   \
		map(v_gelu_erf, x, y, n);        \
		return;                          \
	case OPS_ACT_GELU_TANH:                  \
		map(v_gelu_tanh, x, y, n);       \
		return;                          \
	case OPS_ACT_SILU:                       \
		map(v_silu, x, y, n);            \
		return;                          \
	case OPS_ACT_SIGMOID:                    \
		map(v_sigmoid, x, y, n);         \
		return;                          \
	case OPS_ACT_TANH:                       \
		map(v_tanh, x, y, n);            \
		return

static void avx512_act_f32(enum ops_act a, const float *x, float *y, size_t n)
{
	switch (a) {
	case OPS_ACT_RELU:
		map_relu(x, y, n);
		return;
	ACT_EXP_CASES(map16, x, y, n);
	case OPS_ACT_NONE:
	case OPS_NACTS:
		break;
	}
	/* none (and anything unknown) is the identity */
	if (x != y)
		memmove(y, x, n * sizeof *y);
}

static void avx512_act_f32_stream(enum ops_act a, const float *x, float *y, size_t n)
{
	switch (a) {
	case OPS_ACT_RELU:
		map16_stream(v_relu, x, y, n);
		return;
	ACT_EXP_CASES(map16_stream, x, y, n);
	case OPS_ACT_NONE:
	case OPS_NACTS:
		break;
	}
	avx512_act_f32(a, x, y, n);
}

/* ---- conv2d direct: 12 pixels x 32 channels, or 14 x 16 --------------------------
 * Two weight panels: 24 accumulators, two weight vectors and the broadcasts
 * as memory operands of the FMAs, 24 FMAs per 2 + 12 loads. One panel (a
 * tile of 16 output channels, as the planner often picks): 14 accumulators,
 * 14 FMAs per 1 + 14 loads; 14 pixels are half of a 28-wide output row. So
 * the two FMA pipes, not the load ports, bound the loop either way. Pixels
 * one apart (a unit-stride run inside one output row, the common case) are
 * addressed from one pointer; others each from their own. */
#define DPB2 12
#define DPB1 14

ALWAYS_INLINE void direct_body(int np, int two, int contiguous, const float *const *pix,
			       const int32_t *off, int64_t nterm, const float *wp,
			       const float *wq, float *out)
{
	__m512 c0[DPB1], c1[DPB1];
	const float *x0 = pix[0];
	const int kw = two ? 32 : 16;

	for (int p = 0; p < np; p++)
		c0[p] = c1[p] = _mm512_setzero_ps();
	for (int64_t i = 0; i < nterm; i++) {
		__m512 w0 = _mm512_loadu_ps(wp + 16 * i);
		__m512 w1 = two ? _mm512_loadu_ps(wq + 16 * i) : w0;
		int32_t o = off[i];

#pragma GCC unroll 14
		for (int p = 0; p < np; p++) {
			__m512 b = _mm512_set1_ps(contiguous ? x0[o + p] : pix[p][o]);
			c0[p] = _mm512_fmadd_ps(b, w0, c0[p]);
			if (two)
				c1[p] = _mm512_fmadd_ps(b, w1, c1[p]);
		}
	}
	for (int p = 0; p < np; p++) {
		_mm512_storeu_ps(out + kw * p, c0[p]);
		if (two)
			_mm512_storeu_ps(out + kw * p + 16, c1[p]);
	}
}

static void avx512_conv_direct(const float *const *pix, const int32_t *off, int64_t nterm,
			       const float *wp, int64_t wstride, float *out)
{
	int two = wstride != 0, np = two ? DPB2 : DPB1, contiguous = 1;

	for (int p = 1; p < np; p++)
		contiguous &= pix[p] == pix[0] + p;
	if (two && contiguous)
		direct_body(DPB2, 1, 1, pix, off, nterm, wp, wp + wstride, out);
	else if (two)
		direct_body(DPB2, 1, 0, pix, off, nterm, wp, wp + wstride, out);
	else if (contiguous)
		direct_body(DPB1, 0, 1, pix, off, nterm, wp, wp, out);
	else
		direct_body(DPB1, 0, 0, pix, off, nterm, wp, wp, out);
}

/* ---- the fp32 GEMM: 6 rows x 32 columns ------------------------------------------- */

static void avx512_conv_gemm(const float *a, const float *b, int64_t bstride, int64_t kdim,
			     float *out, int64_t ldo, int accumulate)
{
	__m512 c0[6], c1[6];
	const float *b1 = b + bstride;

	for (int r = 0; r < 6; r++)
		c0[r] = c1[r] = _mm512_setzero_ps();
	for (int64_t i = 0; i < kdim; i++) {
		__m512 x0 = _mm512_loadu_ps(b + 16 * i), x1 = _mm512_loadu_ps(b1 + 16 * i);

#pragma GCC unroll 6
		for (int r = 0; r < 6; r++) {
			__m512 v = _mm512_set1_ps(a[6 * i + r]);
			c0[r] = _mm512_fmadd_ps(v, x0, c0[r]);
			c1[r] = _mm512_fmadd_ps(v, x1, c1[r]);
		}
	}
	for (int r = 0; r < 6; r++) {
		float *o = out + r * ldo;

		if (accumulate) {
			c0[r] = _mm512_add_ps(c0[r], _mm512_loadu_ps(o));
			c1[r] = _mm512_add_ps(c1[r], _mm512_loadu_ps(o + 16));
		}
		_mm512_storeu_ps(o, c0[r]);
		_mm512_storeu_ps(o + 16, c1[r]);
	}
}

/* ---- a 1x1 convolution as one GEMM, fp32 ------------------------------------------
 * y[k][p] = sum_c w[k][c] x[c][p] over whole planes, straight from NCHW x
 * and KC w: 6 output channels x 32 positions in 12 accumulators, each
 * channel's 32 positions two loads of x's row, each weight a broadcast.
 * The 32 positions' rows of x (nc * 128 bytes) are read from memory by the
 * first 6 channels and from the cache by the others, where the lanes
 * kernel's bands of a deep 1x1 layer were a copy of x larger than the L2
 * (256 -> 64 channels at 56x56: 269 us of bands in a 1.2 ms launch). */
ALWAYS_INLINE void gemm_f32_rows(const float *x, int64_t nc, int64_t nq, const float *w, int nr,
				 __mmask16 m0, __mmask16 m1, float *y)
{
	__m512 c0[6], c1[6];

#pragma GCC unroll 6
	for (int r = 0; r < 6; r++)
		c0[r] = c1[r] = _mm512_setzero_ps();
	for (int64_t c = 0; c < nc; c++) {
		const float *xr = x + c * nq;
		__m512 x0 = _mm512_maskz_loadu_ps(m0, xr), x1 = _mm512_maskz_loadu_ps(m1, xr + 16);

#pragma GCC unroll 6
		for (int r = 0; r < 6; r++)
			if (r < nr) {
				__m512 v = _mm512_set1_ps(w[r * nc + c]);
				c0[r] = _mm512_fmadd_ps(v, x0, c0[r]);
				c1[r] = _mm512_fmadd_ps(v, x1, c1[r]);
			}
	}
#pragma GCC unroll 6
	for (int r = 0; r < 6; r++)
		if (r < nr) {
			_mm512_mask_storeu_ps(y + r * nq, m0, c0[r]);
			_mm512_mask_storeu_ps(y + r * nq + 16, m1, c1[r]);
		}
}

static void avx512_conv_f32_gemm(const float *x, int64_t nc, int64_t nq, const float *w,
				 int64_t nk, float *y)
{
	for (int64_t q0 = 0; q0 < nq; q0 += 32) {
		int64_t left = nq - q0;
		__mmask16 m0 = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
		__mmask16 m1 = left >= 32 ? (__mmask16)0xFFFF :
			       left > 16 ? (__mmask16)((1u << (left - 16)) - 1u) : 0;

		for (int64_t k0 = 0; k0 < nk; k0 += 6) {
			const float *wk = w + k0 * nc;
			float *yk = y + k0 * nq + q0;

			/* a constant row count for each: gcc's loop with a
			 * variable one kept the accumulators in memory */
			switch (nk - k0 < 6 ? (int)(nk - k0) : 6) {
			case 1: gemm_f32_rows(x + q0, nc, nq, wk, 1, m0, m1, yk); break;
			case 2: gemm_f32_rows(x + q0, nc, nq, wk, 2, m0, m1, yk); break;
			case 3: gemm_f32_rows(x + q0, nc, nq, wk, 3, m0, m1, yk); break;
			case 4: gemm_f32_rows(x + q0, nc, nq, wk, 4, m0, m1, yk); break;
			case 5: gemm_f32_rows(x + q0, nc, nq, wk, 5, m0, m1, yk); break;
			default: gemm_f32_rows(x + q0, nc, nq, wk, 6, m0, m1, yk); break;
			}
		}
	}
}

/* ---- qgemm: vpdpbusd ---------------------------------------------------------------
 * The one part of the file that needs VNNI, compiled for it (clang takes
 * one target attribute a function: the file's is swapped for the section). */
#if defined(__clang__)
#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")
#endif
/*
 * vpdpbusd adds four u8 x s8 products into each int32 lane without
 * saturating (unlike vpmaddubsw's int16 pairs), so a K tile's int32 sums are
 * exact while kk <= OPS_QGEMM_MAX_TILE_KK (255 * 128 * 65536 < 2^31). An s8 A
 * is read as a ^ 0x80 = a + 128 (u8), and 128 * sum(b) comes off after:
 * the column sums ride along as vpdpbusd of ones with b. */

/* acc<k>0 (and acc<k>1 where J > 1) += av against b0 (b1), the vpdpbusd
 * pair of both forms (the in-place rows below, the packed form's vp_block);
 * k may be empty */
#define VNNI_DP2(acc, k, av)                                                            \
	do {                                                                            \
		acc##k##0 = _mm512_dpbusd_epi32(acc##k##0, av, b0);                     \
		if (J > 1)                                                              \
			acc##k##1 = _mm512_dpbusd_epi32(acc##k##1, av, b1);             \
	} while (0)

/* One 64-byte step of K for R rows and J columns (tailm masks the tail): B's
 * two columns from b0p and b1p (B read in place, [N][K]). It prefetches
 * into L2 the same step at pf0p and pf1p, which the caller points ahead of
 * the stream: each 2 KiB run of a B row read in place starts a new
 * page for the hardware prefetcher, which left the loop waiting on DRAM.
 * (A prefetch never faults: past the end is harmless.) The accumulators are
 * named variables, not arrays: with arrays gcc kept some of them on the
 * stack. */
#define VNNI_LOAD(p, o, masked) \
	((masked) ? _mm512_maskz_loadu_epi8(tailm, (p) + (o)) : _mm512_loadu_si512((p) + (o)))
#define VNNI_ROW(k, masked)                                                             \
	do {                                                                            \
		if (R > k) {                                                            \
			__m512i av = VNNI_LOAD(ap##k, q, masked);                       \
			if (s8a)                                                        \
				av = _mm512_xor_si512(av, flip);                        \
			VNNI_DP2(x, k, av);                                             \
		}                                                                       \
	} while (0)
#define VNNI_STEP(masked)                                                               \
	do {                                                                            \
		__m512i b0 = VNNI_LOAD(b0p, q, masked);                                 \
		__m512i b1 = J > 1 ? VNNI_LOAD(b1p, q, masked) : b0;                    \
		_mm_prefetch((const char *)(pf0p + q), _MM_HINT_T1);                    \
		if (J > 1)                                                              \
			_mm_prefetch((const char *)(pf1p + q), _MM_HINT_T1);            \
		if (pfa)                                                                \
			_mm_prefetch((const char *)(pfa + q), _MM_HINT_T1);             \
		if (s8a || csum) {                                                      \
			cs0 = _mm512_dpbusd_epi32(cs0, ones, b0);                       \
			if (J > 1)                                                      \
				cs1 = _mm512_dpbusd_epi32(cs1, ones, b1);               \
		}                                                                       \
		VNNI_ROW(0, masked);								\
		VNNI_ROW(1, masked);								\
		VNNI_ROW(2, masked);								\
		VNNI_ROW(3, masked);								\
		VNNI_ROW(4, masked);								\
		VNNI_ROW(5, masked);								\
		VNNI_ROW(6, masked);								\
		VNNI_ROW(7, masked);								\
	} while (0)

/* [sum(v[0]), ..., sum(v[15])] of sixteen int32 x 16 vectors: pairs of
 * vectors interleaved and added within 128-bit lanes (32-bit, then 64-bit
 * interleaves: each lane then holds four vectors' lane sums), then the four
 * lanes added across vectors by 128-bit shuffles. */
static inline __m512i hsum16(const __m512i v[16])
{
	__m512i u[8], w[4];

	for (int i = 0; i < 8; i++)
		u[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]),
					_mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]));
	for (int i = 0; i < 4; i++)
		w[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(u[2 * i], u[2 * i + 1]),
					_mm512_unpackhi_epi64(u[2 * i], u[2 * i + 1]));
	__m512i x = _mm512_add_epi32(_mm512_shuffle_i32x4(w[0], w[1], 0x88),
				     _mm512_shuffle_i32x4(w[0], w[1], 0xdd));
	__m512i y = _mm512_add_epi32(_mm512_shuffle_i32x4(w[2], w[3], 0x88),
				     _mm512_shuffle_i32x4(w[2], w[3], 0xdd));
	return _mm512_add_epi32(_mm512_shuffle_i32x4(x, y, 0x88), _mm512_shuffle_i32x4(x, y, 0xdd));
}

/* Adds (add) or writes one row's two sums into c[0..J-1] */
#define VNNI_OUT(k)                                                                      \
	do {                                                                             \
		if (R > k) {                                                             \
			int32_t *cr = c + k * ldc;                                       \
			cr[0] = (add ? cr[0] : 0) + _mm512_reduce_add_epi32(x##k##0) - corr0; \
			if (J > 1)                                                       \
				cr[1] = (add ? cr[1] : 0) + _mm512_reduce_add_epi32(x##k##1) - corr1; \
		}                                                                        \
	} while (0)

/* c[i*ldc + j] for R rows and J (1 or 2) columns, the whole kk: R x J
 * accumulators stay in registers; A's rows (lda apart) come from L1; cs
 * (csum) takes the columns' sums. */
ALWAYS_INLINE void vnni_block(int R, int J, int s8a, int csum, int add, const uint8_t *a,
			      int64_t lda, const int8_t *b0p, const int8_t *b1p, int64_t kk,
			      int32_t *c, int64_t ldc, int32_t *cs,
			      const int8_t *pf0p, const int8_t *pf1p, const uint8_t *pfa)
{
	const __m512i z = _mm512_setzero_si512();
	const __m512i flip = _mm512_set1_epi8((char)0x80), ones = _mm512_set1_epi8(1);
	__m512i cs0 = z, cs1 = z;
	__m512i x00 = z, x01 = z, x10 = z, x11 = z, x20 = z, x21 = z, x30 = z, x31 = z;
	__m512i x40 = z, x41 = z, x50 = z, x51 = z, x60 = z, x61 = z, x70 = z, x71 = z;
	const uint8_t *ap0 = a, *ap1 = a + (R > 1 ? 1 : 0) * lda, *ap2 = a + (R > 2 ? 2 : 0) * lda;
	const uint8_t *ap3 = a + (R > 3 ? 3 : 0) * lda, *ap4 = a + (R > 4 ? 4 : 0) * lda;
	const uint8_t *ap5 = a + (R > 5 ? 5 : 0) * lda, *ap6 = a + (R > 6 ? 6 : 0) * lda;
	const uint8_t *ap7 = a + (R > 7 ? 7 : 0) * lda;
	__mmask64 tailm = ~(__mmask64)0;
	int64_t q = 0;

	for (; q + 64 <= kk; q += 64)
		VNNI_STEP(0);
	if (q < kk) {
		tailm = ((__mmask64)1 << (kk - q)) - 1;
		VNNI_STEP(1);
	}
	int32_t sum0 = s8a || csum ? _mm512_reduce_add_epi32(cs0) : 0;
	int32_t sum1 = (s8a || csum) && J > 1 ? _mm512_reduce_add_epi32(cs1) : 0;
	int32_t corr0 = s8a ? 128 * sum0 : 0, corr1 = s8a ? 128 * sum1 : 0;
	if (csum) { /* the column sums ride along (once per column: the first rows) */
		cs[0] = (add ? cs[0] : 0) + sum0;
		if (J > 1)
			cs[1] = (add ? cs[1] : 0) + sum1;
	}
	if (R == 8 && J == 2) {
		/* the 16 sums at once (hsum16): a third of the instructions of 16
		 * reductions, which were as many as a 256-byte K tile's loop */
		const __m512i v[16] = { x00, x01, x10, x11, x20, x21, x30, x31,
					x40, x41, x50, x51, x60, x61, x70, x71 };
		int32_t t[16];
		_mm512_storeu_si512(t, hsum16(v));
		for (int r = 0; r < 8; r++) {
			int32_t *cr = c + r * ldc;
			cr[0] = (add ? cr[0] : 0) + t[2 * r] - corr0;
			cr[1] = (add ? cr[1] : 0) + t[2 * r + 1] - corr1;
		}
		return;
	}
	VNNI_OUT(0);
	VNNI_OUT(1);
	VNNI_OUT(2);
	VNNI_OUT(3);
	VNNI_OUT(4);
	VNNI_OUT(5);
	VNNI_OUT(6);
	VNNI_OUT(7);
}

/* The block with s8a and csum as constants (4 instances for each R and J). */
#define VNNI_VARIANTS(R, J, ...)                                                        \
	do {                                                                             \
		if (s8a && csum)                                                         \
			vnni_block(R, J, 1, 1, __VA_ARGS__);                             \
		else if (s8a)                                                            \
			vnni_block(R, J, 1, 0, __VA_ARGS__);                             \
		else if (csum)                                                           \
			vnni_block(R, J, 0, 1, __VA_ARGS__);                             \
		else                                                                     \
			vnni_block(R, J, 0, 0, __VA_ARGS__);                             \
	} while (0)

/* The in-place form's prefetches run VNNI_PF_AHEAD column pairs ahead (four
 * rows on, or, past the tile's last row, the first rows' next K chunk). Two
 * blocks ahead kept more lines in flight than the next chunk of the same
 * rows had (a whole pass over the tile's rows ahead, 3-9% slower from
 * DRAM). */
#define VNNI_PF_AHEAD 2

/* vnni_rows<R>_<P>: R rows of A P bytes apart (the copied chunk's pitch, a
 * constant: the 8 rows' addresses are then offsets from one register, where
 * a pitch in a register took 8 of them and spilled the loop's bound); B read
 * in place, rows ldb apart. Column pair p < R prefetches row p of A's next
 * chunk (an: its first row, rows ldan apart). */
#define VNNI_ROWS(R, P)                                                                  \
	static void vnni_rows##R##_##P(int s8a, int add, const uint8_t *a, const int8_t *b, \
				       int64_t ldb, int64_t tn, int64_t kk, int32_t *c,      \
				       int32_t *cs, const uint8_t *an, int64_t ldan)         \
	{                                                                                  \
		const int csum = cs != NULL;                                               \
		for (int64_t j = 0; j < tn; j += 2) {                                      \
			const uint8_t *pfa = an && j / 2 < R ? an + (j / 2) * ldan : NULL; \
			const int64_t jn = j + 2 * VNNI_PF_AHEAD;                          \
			const int8_t *pf0 = b + (jn % tn) * ldb + (jn / tn) * kk;           \
			const int8_t *pf1 = b + ((jn + 1) % tn) * ldb + ((jn + 1) / tn) * kk; \
			if (tn - j >= 2)                                                   \
				VNNI_VARIANTS(R, 2, add, a, P, b + j * ldb, b + (j + 1) * ldb, \
					      kk, c + j, tn, csum ? cs + j : NULL, pf0, pf1, pfa); \
			else                                                               \
				VNNI_VARIANTS(R, 1, add, a, P, b + j * ldb, b + j * ldb,       \
					      kk, c + j, tn, csum ? cs + j : NULL, pf0, pf0, pfa); \
		}                                                                          \
	}
#define VNNI_ALL(F, P)                                                                   \
	F(1, P) F(2, P) F(3, P) F(4, P) F(5, P) F(6, P) F(7, P) F(8, P)
VNNI_ALL(VNNI_ROWS, 2112)
VNNI_ALL(VNNI_ROWS, 4160)

/* K is walked in chunks for every column: A's chunk of 8 rows stays in L1
 * while B streams. A whole large K tile at once read A from L2 for every
 * pair of columns: a 16 KiB K tile ran 1.8x slower than a 1 KiB one. Each
 * chunk's sums are exact in int32 like the tile's.
 *
 * The chunk is copied first into achunk, rows a chunk and a line apart
 * (the rows' lines then spread over L1's sets): A's own rows are lda
 * apart, and at a power-of-two lda (the bench's K = 2^20) the 8 rows' lines
 * at one offset fall in one set of an 8-way L1 and L2, where every B line
 * of that offset evicted one of them (on a Zen 4 core the kernel ran
 * 9.2-9.9 ms for what B streams in 3.7 at 4 rows; copied, 4.9-5.3). */
#define VNNI_KC_MAX 4096
static _Thread_local uint8_t achunk[9 * (VNNI_KC_MAX + 64)] __attribute__((aligned(64)));
_Static_assert(VNNI_KC_MAX + 64 == 4160 && VNNI_KC_MAX / 2 + 64 == 2112,
	       "the rows kernels' pitches (VNNI_ALL) follow the chunk");

/* The chunk: 4096 bytes where 8 rows of it take at most two thirds of L1D
 * (48 KiB and more: Golden Cove, where it was tuned), else 2048 (the 32
 * KiB of a Zen 4 core: 4096 ran 7.6-8.2 ms there, 2048 4.9-5.3, 1024 7.1-7.5,
 * and lengths that are no divisor of a page 6.7-7.6). The packed form has
 * its own (vp_kc); a forced chunk (tests) is both forms'. */
static _Atomic int64_t vnni_kc_forced;

static int64_t vnni_kc(void)
{
	static _Atomic int64_t kc;
	int64_t v = atomic_load_explicit(&vnni_kc_forced, memory_order_relaxed);

	if (v)
		return v;
	if (!(v = atomic_load_explicit(&kc, memory_order_relaxed))) {
		long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
		v = l1 > 0 && 8 * VNNI_KC_MAX * 3 > 2 * l1 ? VNNI_KC_MAX / 2 : VNNI_KC_MAX;
		atomic_store_explicit(&kc, v, memory_order_relaxed);
	}
	return v;
}

int ops_avx512_qgemm_chunk_force(int64_t kc)
{
	if (kc != 0 && kc != VNNI_KC_MAX && kc != VNNI_KC_MAX / 2)
		return -1;
	atomic_store_explicit(&vnni_kc_forced, kc, memory_order_relaxed);
	return 0;
}

/* Copies rows [i0, i0+R) of A's columns [q, q+len) into achunk (pitch
 * apart) and returns the same rows' next chunk (for the prefetches that
 * feed the next copy, whose reads of 8 new pages stalled it otherwise,
 * twice as often at half the columns a call), NULL after the last. */
static const uint8_t *vnni_copy_a(const void *a, int64_t lda, int64_t i0, int R, int64_t q,
				  int64_t len, int64_t kk, int64_t pitch)
{
	const uint8_t *ai = (const uint8_t *)a + i0 * lda;

	for (int r = 0; r < R; r++)
		memcpy(achunk + r * pitch, ai + r * lda + q, (size_t)len);
	return q + len < kk ? ai + q + len : NULL;
}

typedef void (*vnni_rows_fn)(int, int, const uint8_t *, const int8_t *, int64_t, int64_t,
			     int64_t, int32_t *, int32_t *, const uint8_t *, int64_t);

static void avx512_qgemm(enum ops_dtype at, const void *a, int64_t lda, const int8_t *b,
			 int64_t ldb, int64_t m, int64_t tn, int64_t kk, int32_t *c, int32_t *cs,
			 int16_t *a16)
{
	static const vnni_rows_fn rows2112[9] = {
		NULL, vnni_rows1_2112, vnni_rows2_2112, vnni_rows3_2112, vnni_rows4_2112,
		vnni_rows5_2112, vnni_rows6_2112, vnni_rows7_2112, vnni_rows8_2112
	};
	static const vnni_rows_fn rows4160[9] = {
		NULL, vnni_rows1_4160, vnni_rows2_4160, vnni_rows3_4160, vnni_rows4_4160,
		vnni_rows5_4160, vnni_rows6_4160, vnni_rows7_4160, vnni_rows8_4160
	};
	const int64_t kc = vnni_kc(), pitch = kc + 64;
	const vnni_rows_fn *rows = pitch == 2112 ? rows2112 : rows4160;
	int s8a = at != OPS_U8;

	(void)a16;
	for (int64_t q0 = 0; q0 < kk; q0 += kc) {
		int64_t len = kk - q0 < kc ? kk - q0 : kc;
		for (int64_t i0 = 0; i0 < m; i0 += 8) {
			int R = m - i0 < 8 ? (int)(m - i0) : 8;
			const uint8_t *an = vnni_copy_a(a, lda, i0, R, q0, len, kk, pitch);
			/* (the block's rows as rows 0..R-1 of achunk and of c) */
			rows[R](s8a, q0 > 0, achunk, b + q0, ldb, tn, len, c + i0 * tn,
				i0 == 0 ? cs : NULL, an, lda);
		}
	}
}

/* ---- the packed form: lanes across columns ------------------------------------ */

/* B packed (qgemm_int.h) holds, for each quad of K (4 bytes), 32 columns'
 * 4 bytes side by side: one vpdpbusd takes row r's quad of A broadcast to
 * all lanes against 16 columns' quads, so a lane's int32 sum is one (row,
 * column) sum and stays in its register across the whole K range. The
 * in-place form's lanes run along K instead: it sums 16 lanes into one
 * scalar at the end of every chunk for every (row, column), which on a
 * Zen 4 core held it at 73% of vpdpbusd's rate with B in L2 (the same
 * products in this form: 95%), and its A loads were 64 bytes for two
 * products where a broadcast is 4 bytes for two.
 *
 * Exact: a lane sums kk products of at most 255 * 128, under 2^31 while kk
 * <= OPS_QGEMM_MAX_TILE_KK. An s8 A is copied as a ^ 0x80 = a + 128 (u8);
 * 128 * (the columns' sums) comes off at the end of each chunk, where those
 * sums come from a ninth row of ones in the copy (zero past the range, as
 * the A rows are: the quad that straddles its end reads B bytes that are
 * not in it). */

/* One chunk's copy of A (achunk): rows VP_PITCH apart at any chunk, a row
 * of ones after them for the column sums (VP_ONES). */
#define VP_PITCH (VNNI_KC_MAX + 64)
#define VP_ONES 8
/* B's stream prefetched this far ahead (the in-place form's note above: at
 * 4 KiB the hardware prefetcher alone did not keep up; 16 and 32 KiB were
 * within the noise of each other on a Zen 4 core) */
#define VP_PF 16384

#define VP_BCAST(r) _mm512_set1_epi32(vp_load32(ac + (r) * VP_PITCH + 4 * u))
#define VP_ROW(k)                                                                        \
	do {                                                                             \
		if (R > k)                                                               \
			VNNI_DP2(y, k, VP_BCAST(k));                                     \
	} while (0)
#define VP_STORE(k)                                                                      \
	do {                                                                             \
		if (R > k) {                                                             \
			if (s8a)                                                         \
				y##k##0 = _mm512_sub_epi32(y##k##0, _mm512_slli_epi32(s0, 7)); \
			vp_put(c + k * ldc, m0, y##k##0, add);                           \
			if (J > 1) {                                                     \
				if (s8a)                                                 \
					y##k##1 = _mm512_sub_epi32(y##k##1, _mm512_slli_epi32(s1, 7)); \
				vp_put(c + k * ldc + 16, m1, y##k##1, add);              \
			}                                                                \
		}                                                                        \
	} while (0)

static inline int32_t vp_load32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof v);
	return v;
}

/* The first n lanes of 16 (none for n <= 0, all for n >= 16). */
static inline __mmask16 vp_lanes(int64_t n)
{
	return n <= 0 ? 0 : n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1);
}

/* v into the lanes m of p, added to what is there when add */
static inline void vp_put(int32_t *p, __mmask16 m, __m512i v, int add)
{
	if (add)
		v = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m, p), v);
	_mm512_mask_storeu_epi32(p, m, v);
}

/* c[i*ldc + j] (+)= the sums of rows 0..R-1 of the copy ac against one group
 * of G columns (J = 1 vector for G <= 16, else 2; masks m0, m1 say which of
 * their lanes are columns) over nq quads from bq, G * 4 bytes a quad. sums:
 * the ones row runs along (s8a takes 128 times it off; cs, when not NULL,
 * gets it). pfa: A's next chunk, its R rows lda apart, prefetched a line
 * every two quads (its copy, on its first quads, waited on DRAM for 8 new
 * rows otherwise: 15% of the time from DRAM). */
ALWAYS_INLINE void vp_block(int R, int J, int sums, int s8a, int add, const uint8_t *ac,
			    const int8_t *bq, int64_t gq, int64_t nq, int32_t *c, int64_t ldc,
			    __mmask16 m0, __mmask16 m1, int32_t *cs, const uint8_t *pfa,
			    int64_t lda)
{
	const __m512i z = _mm512_setzero_si512();
	__m512i y00 = z, y01 = z, y10 = z, y11 = z, y20 = z, y21 = z, y30 = z, y31 = z;
	__m512i y40 = z, y41 = z, y50 = z, y51 = z, y60 = z, y61 = z, y70 = z, y71 = z;
	__m512i s0 = z, s1 = z;

	for (int64_t u = 0; u < nq; u++, bq += gq) {
		const __m512i b0 = _mm512_maskz_loadu_epi32(m0, bq);
		const __m512i b1 = J > 1 ? _mm512_maskz_loadu_epi32(m1, bq + 64) : z;
		_mm_prefetch((const char *)(bq + VP_PF), _MM_HINT_T1);
		if (J > 1)
			_mm_prefetch((const char *)(bq + 64 + VP_PF), _MM_HINT_T1);
		if (pfa)
			_mm_prefetch((const char *)(pfa + ((u >> 1) & 7) % R * lda + (u >> 4) * 64),
				     _MM_HINT_T1);
		if (sums) {
			const __m512i ov = VP_BCAST(VP_ONES);
			VNNI_DP2(s, , ov);
		}
		VP_ROW(0);
		VP_ROW(1);
		VP_ROW(2);
		VP_ROW(3);
		VP_ROW(4);
		VP_ROW(5);
		VP_ROW(6);
		VP_ROW(7);
	}
	VP_STORE(0);
	VP_STORE(1);
	VP_STORE(2);
	VP_STORE(3);
	VP_STORE(4);
	VP_STORE(5);
	VP_STORE(6);
	VP_STORE(7);
	if (cs) {
		vp_put(cs, m0, s0, add);
		if (J > 1)
			vp_put(cs + 16, m1, s1, add);
	}
}

/* vp_block_<R>_<J>_<variant>: each shape of block in a function of its own.
 * Inlined into the loop over groups, the six blocks of one R shared gcc's
 * register allocation, which kept the hot loop's accumulators in other
 * registers than its body's (a copy of each a step) and four on the stack
 * (a store and a load a step). With that, and the accumulators started at
 * zero (C added at the store, not loaded before the loop), the qgemm
 * 8x64x16384 with B in L2 went from 59.8 to 49.6 us a call (driver median
 * of 300) and the bench's 8x64x2^20 from DRAM from 6.75 to 6.27 ms (median
 * of 30 after a 300 MiB sweep; a plain read of its 72 MiB took 5.4). A call
 * a group and chunk costs nothing beside a chunk's steps. */
#define VP_BLOCK_ARGS                                                                    \
	int add, const uint8_t *ac, const int8_t *bq, int64_t gq, int64_t nq, int32_t *c,   \
		int64_t ldc, __mmask16 m0, __mmask16 m1, int32_t *cs, const uint8_t *pfa,   \
		int64_t lda
#define VP_BLOCK_PASS add, ac, bq, gq, nq, c, ldc, m0, m1, cs, pfa, lda
#define VP_BLOCK_FN(R, J)                                                                \
	static __attribute__((noinline)) void vp_block_##R##_##J##_a(VP_BLOCK_ARGS)     \
	{                                                                                \
		vp_block(R, J, 1, 1, VP_BLOCK_PASS);                                     \
	}                                                                                \
	static __attribute__((noinline)) void vp_block_##R##_##J##_s(VP_BLOCK_ARGS)     \
	{                                                                                \
		vp_block(R, J, 1, 0, VP_BLOCK_PASS);                                     \
	}                                                                                \
	static __attribute__((noinline)) void vp_block_##R##_##J##_n(VP_BLOCK_ARGS)     \
	{                                                                                \
		vp_block(R, J, 0, 0, VP_BLOCK_PASS);                                     \
	}
#define VP_BLOCKS(R, P_) VP_BLOCK_FN(R, 1) VP_BLOCK_FN(R, 2)
VNNI_ALL(VP_BLOCKS, 0)

/* vp_groups<R>: one chunk for R rows, every group of the tile's w columns
 * (bc: the chunk, kc bytes a column; quads [t0, t0+nq) of it). Only the
 * first group prefetches A's next chunk. */
#define VP_VARIANTS(R, J, ...)                                                           \
	do {                                                                             \
		if (s8a)                                                                 \
			vp_block_##R##_##J##_a(__VA_ARGS__);                             \
		else if (cs)                                                             \
			vp_block_##R##_##J##_s(__VA_ARGS__);                             \
		else                                                                     \
			vp_block_##R##_##J##_n(__VA_ARGS__);                             \
	} while (0)
#define VP_GROUPS(R, P_)                                                                 \
	static void vp_groups##R(int s8a, int add, const int8_t *bc, int64_t kc, int64_t w, \
				 int64_t t0, int64_t nq, int32_t *c, int32_t *cs,           \
				 const uint8_t *an, int64_t lda)                            \
	{                                                                                \
		for (int64_t g = 0; g < w; g += 32) {                                    \
			const int64_t G = w - g < 32 ? w - g : 32;                       \
			const __mmask16 m0 = vp_lanes(G), m1 = vp_lanes(G - 16);         \
			const int8_t *bq = bc + g * kc + t0 * 4 * G;                     \
			const uint8_t *pfa = g == 0 ? an : NULL;                         \
			if (G > 16)                                                      \
				VP_VARIANTS(R, 2, add, achunk, bq, 4 * G, nq, c + g, w, m0, m1, \
					    cs ? cs + g : NULL, pfa, lda);               \
			else                                                             \
				VP_VARIANTS(R, 1, add, achunk, bq, 4 * G, nq, c + g, w, m0, m1, \
					    cs ? cs + g : NULL, pfa, lda);               \
		}                                                                        \
	}
VNNI_ALL(VP_GROUPS, 0)

/* Copies rows [i0, i0+R) of A's columns [q, q+len) into achunk, VP_PITCH
 * apart, flipped to u8 for an s8 A, zero to the end of the last quad, and
 * (sums) the row of ones over the same quads; returns the rows' next chunk
 * (vnni_copy_a). */
static const uint8_t *vp_copy_a(const void *a, int64_t lda, int64_t i0, int R, int64_t q,
				int64_t len, int64_t kk, int s8a, int sums)
{
	const uint8_t *next = vnni_copy_a(a, lda, i0, R, q, len, kk, VP_PITCH);
	const int64_t padded = (len + 3) / 4 * 4;
	const __m512i flip = _mm512_set1_epi8((char)0x80);

	for (int r = 0; r < R; r++) {
		uint8_t *d = achunk + r * VP_PITCH;

		for (int64_t e = 0; s8a && e < len; e += 64) {
			__mmask64 mk = len - e >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (len - e)) - 1;
			__m512i v = _mm512_maskz_loadu_epi8(mk, d + e);

			_mm512_mask_storeu_epi8(d + e, mk, _mm512_xor_si512(v, flip));
		}
		memset(d + len, 0, (size_t)(padded - len));
	}
	if (sums) {
		memset(achunk + VP_ONES * VP_PITCH, 1, (size_t)len);
		memset(achunk + VP_ONES * VP_PITCH + len, 0, (size_t)(padded - len));
	}
	return next;
}

typedef void (*vp_groups_fn)(int, int, const int8_t *, int64_t, int64_t, int64_t, int64_t,
			     int32_t *, int32_t *, const uint8_t *, int64_t);

/* The packed form's chunk: VNNI_KC_MAX at any L1D (the copy of A is read
 * by 4-byte broadcasts, 16 per line, so it need not stay in L1 as the
 * in-place form's 64-byte rows must: on a Zen 4 core 4096 and 8192 ran
 * within 2% of each other from DRAM, 2048 5% slower), or the forced one. */
static int64_t vp_kc(void)
{
	int64_t v = atomic_load_explicit(&vnni_kc_forced, memory_order_relaxed);

	return v ? v : VNNI_KC_MAX;
}

static int64_t avx512_qgemm_pack_chunk(void)
{
	return vp_kc();
}

/* The packed form (qgemm_int.h): K in the layout's chunks (B one sequential
 * stream; read in place it is 2 KiB runs of 64 rows 1 MiB apart, which the
 * hardware prefetcher followed at 15-18 GB/s on a Zen 4 core against 25-29
 * for long runs), each chunk's copy of A read by every group of columns. */
static void avx512_qgemm_packed(enum ops_dtype at, const void *a, int64_t lda, const int8_t *bp,
				int64_t w, int64_t k0, int64_t m, int64_t kk, int32_t *c,
				int32_t *cs)
{
	static const vp_groups_fn rows[9] = {
		NULL, vp_groups1, vp_groups2, vp_groups3, vp_groups4,
		vp_groups5, vp_groups6, vp_groups7, vp_groups8
	};
	const int64_t kc = vp_kc();
	int s8a = at != OPS_U8;

	for (int64_t q = 0; q < kk;) {
		int64_t o = (k0 + q) % kc, len = kc - o < kk - q ? kc - o : kk - q;
		const int8_t *bc = bp + (k0 + q) / kc * w * kc;
		for (int64_t i0 = 0; i0 < m; i0 += 8) {
			int R = m - i0 < 8 ? (int)(m - i0) : 8;
			int32_t *csr = i0 == 0 ? cs : NULL;
			const uint8_t *an = vp_copy_a(a, lda, i0, R, q, len, kk, s8a, s8a || csr);
			rows[R](s8a, q > 0, bc, kc, w, o / 4, (len + 3) / 4, c + i0 * w, csr, an, lda);
		}
		q += len;
	}
}

static void avx512_qgemm_colsum(const int8_t *b, int64_t ldb, int64_t tn, int64_t kk,
				int32_t *cs)
{
	const __m512i flip = _mm512_set1_epi8((char)0x80);

	for (int64_t j = 0; j < tn; j++) {
		const int8_t *bj = b + j * ldb;
		__m512i s = _mm512_setzero_si512();
		int64_t q = 0, tot;
		/* b ^ 0x80 read as u8 is b + 128; SAD against zero sums 8 bytes */
		for (; q + 64 <= kk; q += 64) {
			__m512i v = _mm512_xor_si512(_mm512_loadu_si512(bj + q), flip);
			s = _mm512_add_epi64(s, _mm512_sad_epu8(v, _mm512_setzero_si512()));
		}
		tot = _mm512_reduce_add_epi64(s) - 128 * q;
		for (; q < kk; q++)
			tot += bj[q];
		cs[j] = (int32_t)tot;
	}
}

#if defined(__clang__)
#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC pop_options
#endif

/* ---- permute: 16 x 16 fp32 transposes, streamed 64-byte lines --------------------- */

/* dst[j*ldd + i] = src[i*lds + j] for i < nr, j < nc (both <= 16): 16 rows
 * in zmm registers (masked loads: lanes past nc read as 0 and touch no
 * memory), interleaved at 32 and 64 bits within 128-bit lanes (then u[4k+c]
 * holds, in lane L, column 4L+c of rows 4k..4k+3) and gathered across lanes
 * by two rounds of 128-bit shuffles; each output row is one 64-byte store.
 * nt: whole 16-element rows go out by non-temporal stores (dst row aligned:
 * the caller checks); the rest, and partial rows, by masked stores. */
/* Output row j of a 16 x 16 block (named values, not an array: gcc kept
 * an array of them on the stack). */
ALWAYS_INLINE void tr_store(float *d, int64_t ldd, int j, __m512 v, int nr, int nc,
			    __mmask16 mr, int nt)
{
	if (j >= nc)
		return;
	if (nt && nr == 16)
		_mm512_stream_ps(d + j * ldd, v);
	else if (nr == 16)
		_mm512_storeu_ps(d + j * ldd, v);
	else
		_mm512_mask_storeu_ps(d + j * ldd, mr, v);
}

/* the register transpose itself: tr16_lanes, tr16_regs (kern_avx512_inl.h) */

ALWAYS_INLINE void tr16x16_f32(const float *s, int64_t lds, float *d, int64_t ldd, int nr,
			       int nc, int nt)
{
	const __mmask16 mc = tail_mask((size_t)nc), mr = tail_mask((size_t)nr);
	__m512 r[16], u[16];

	if (nc == 16 && nr == 16) {
		for (int i = 0; i < 16; i++)
			r[i] = _mm512_loadu_ps(s + i * lds);
	} else {
		for (int i = 0; i < 16; i++)
			r[i] = i < nr ? _mm512_maskz_loadu_ps(mc, s + i * lds) : _mm512_setzero_ps();
	}
	tr16_regs(r, u);
	for (int j = 0; j < 16; j++)
		tr_store(d, ldd, j, u[j], nr, nc, mr, nt);
}

/* The whole transpose in 16 x 16 blocks, TR_RUN bytes of each source row
 * per pass (16 sequential runs of up to 2 KiB the prefetchers follow, as
 * the AVX2 path does), the ragged edges through the masks; nt as above. */
#define TR_RUN 2048
ALWAYS_INLINE void tr_f32_body(const float *src, int64_t lds, float *dst, int64_t ldd,
			       int64_t rows, int64_t cols, int nt)
{
	const int64_t run = TR_RUN / (int64_t)sizeof(float);

	for (int64_t j0 = 0; j0 < cols; j0 += run) {
		int64_t j1 = j0 + run < cols ? j0 + run : cols;
		int64_t i = 0;
		/* streamed: two bands at a time, so that each destination row
		 * gets two adjacent lines in a row */
		for (; nt && i + 32 <= rows; i += 32)
			for (int64_t j = j0; j < j1; j += 16) {
				int nc = j1 - j < 16 ? (int)(j1 - j) : 16;
				tr16x16_f32(src + i * lds + j, lds, dst + j * ldd + i, ldd, 16, nc, 1);
				tr16x16_f32(src + (i + 16) * lds + j, lds, dst + j * ldd + i + 16, ldd,
					    16, nc, 1);
			}
		for (; i < rows; i += 16) {
			int nr = rows - i < 16 ? (int)(rows - i) : 16;
			for (int64_t j = j0; j < j1; j += 16)
				tr16x16_f32(src + i * lds + j, lds, dst + j * ldd + i, ldd, nr,
					    j1 - j < 16 ? (int)(j1 - j) : 16, nt);
		}
	}
}

/* Straight into GLOBAL where the destination rows are not 64-byte aligned
 * (the aligned ones take the AVX2 path's bands, ops_avx2_transpose_nt_f32,
 * faster on a Zen 4 core and within the noise on the Intel VM), in bands of
 * TR_NT_ROWS source rows, each band swept along its whole rows 16 columns
 * at a time:
 * the step's two 16 x 16 blocks are transposed into an L1 buffer, then each
 * of its 16 destination rows gets its two lines back to back by
 * non-temporal stores; each source row is read 64 bytes a step, with a
 * software prefetch TR_NT_PF bytes ahead into L2 (32 streams are more than
 * the hardware prefetchers follow; 256 bytes into L1 before, 2048 into L2
 * since: on the Zen 4 core 169-240 ms against 103-115 for the plane).
 * Every byte is touched once and no block is
 * reused, so the sizes are not fitted to the caches (what stays in L1 is
 * 32 x 320 bytes of source lines and the 2 KiB buffer, within any L1 of 32
 * KiB or more); they are the measured optimum of the [4096, 70000]
 * transpose on the AVX-512 VM, the kernel alone over the whole plane, five
 * runs each, interleaved with a memcpy of the same bytes (102-118 ms):
 * bands of 32 rows 116-126 ms, of 16 rows 147-156 ms, of 64 rows 205-267
 * ms (64 source streams at once collapse, prefetched or not); no prefetch
 * 146-155 ms, 192 to 384 bytes ahead within the noise; each block's lines
 * stored as it is transposed (a row's two lines 16 lines apart) 128-137
 * ms. The kernel before (2 KiB runs of 16 x 16 blocks by band pairs) took
 * 162-170 ms called per 512 x 64 tile. Rows past the last band go through
 * tr_f32_body; destination rows that are not 64-byte aligned join a
 * band's lines through a carry (tr_f32_bands_carry), and planes whose
 * source rows share few L2 sets keep the tile order (ops_tr_rows_alias). */
#define TR_NT_ROWS 32
#define TR_NT_PF 2048

/* The tile order: windows of TR_WIN_COLS columns, TR_WIN_ROWS rows at a
 * time (nt: the destination rows are 64-byte aligned). */
#define TR_WIN_COLS 4096
#define TR_WIN_ROWS 64
static void tr_f32_tiles(const float *src, int64_t lds, float *dst, int64_t ldd,
			 int64_t rows, int64_t cols, int nt)
{
	for (int64_t j0 = 0; j0 < cols; j0 += TR_WIN_COLS) {
		int64_t w = cols - j0 < TR_WIN_COLS ? cols - j0 : TR_WIN_COLS;
		for (int64_t i0 = 0; i0 < rows; i0 += TR_WIN_ROWS) {
			int64_t h = rows - i0 < TR_WIN_ROWS ? rows - i0 : TR_WIN_ROWS;
			if (nt)
				tr_f32_body(src + i0 * lds + j0, lds, dst + j0 * ldd + i0, ldd, h, w, 1);
			else
				tr_f32_body(src + i0 * lds + j0, lds, dst + j0 * ldd + i0, ldd, h, w, 0);
		}
	}
}

/* One step of a band: rows i..i+31 x columns j..j+15 of the source into
 * buf[k * TR_NT_ROWS + r] = src[(i + r) * lds + j + k], each source row
 * prefetched TR_NT_PF bytes ahead. */
ALWAYS_INLINE void tr_band_step(const float *src, int64_t lds, float *buf)
{
	const int64_t pf = TR_NT_PF / (int64_t)sizeof(float);

	for (int b = 0; b < TR_NT_ROWS; b += 16) {
		const float *s = src + b * lds;
		__m512 r[16], u[16];
		for (int k = 0; k < 16; k++) {
			_mm_prefetch((const char *)(s + k * lds + pf), _MM_HINT_T1);
			r[k] = _mm512_loadu_ps(s + k * lds);
		}
		tr16_regs(r, u);
		for (int k = 0; k < 16; k++)
			_mm512_store_ps(buf + b + k * TR_NT_ROWS, u[k]);
	}
}

/* Destination rows that are not 64-byte aligned (ldd not a multiple of 16:
 * an odd row count), still by whole lines. A band's 32 elements of
 * destination row j, at p, cover the line that begins h = (16 - p mod 16)
 * mod 16 elements in (stored whole), and share a line with each
 * neighbouring band: the one before p + h gets the previous band's last m
 * = 16 - h elements, kept for it in carry[], and this band's first h, both
 * put together by a vpermt2ps and stored whole. Only the lines where a
 * destination row begins or ends (the first band's head, the last band's
 * tail, the rows past the last band, the columns past the last 16) get
 * ordinary stores, so no line takes both kinds. The bands run over
 * windows of w columns whose carry (w lines) takes an eighth of L2 (4096
 * columns here; stand-alone on [4095, 70000], ms: 1024 columns 162, 2048
 * 143, 4096 131-136, 8192 142, 16384 168, the whole row 162; the 16 x 16
 * blocks' unaligned stores before, 874-1029 ms). Returns 0 where the carry
 * cannot be allocated (the caller then stores unaligned). */
static int tr_f32_bands_carry(const float *src, int64_t lds, float *dst, int64_t ldd,
			      int64_t rows, int64_t cols)
{
	float buf[16 * TR_NT_ROWS] __attribute__((aligned(64)));
	const int64_t c16 = cols / 16 * 16, nb = rows / TR_NT_ROWS * TR_NT_ROWS;
	int64_t w = ops_l2_bytes(0) / 8 / 64 / 16 * 16;
	const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);

	w = w < 256 ? 256 : w;
	w = w < c16 ? w : c16;
	if (nb == 0 || w == 0) {
		tr_f32_body(src, lds, dst, ldd, rows, cols, 0);
		return 1;
	}
	__m512 *carry = aligned_alloc(64, (size_t)w * sizeof *carry);
	if (!carry)
		return 0;
	for (int64_t j0 = 0; j0 < c16; j0 += w) {
		const int64_t j1 = j0 + w < c16 ? j0 + w : c16;
		for (int64_t i = 0; i < nb; i += TR_NT_ROWS)
			for (int64_t j = j0; j < j1; j += 16) {
				tr_band_step(src + i * lds + j, lds, buf);
				for (int k = 0; k < 16; k++) {
					float *p = dst + (j + k) * ldd + i;
					__m512 *cs = carry + (j - j0 + k);
					__m512 lo = _mm512_load_ps(buf + k * TR_NT_ROWS);
					__m512 hi = _mm512_load_ps(buf + k * TR_NT_ROWS + 16);
					const int m = (int)(((uintptr_t)p >> 2) & 15), h = (16 - m) & 15;
					if (!m) { /* this row's lines are aligned */
						_mm512_stream_ps(p, lo);
						_mm512_stream_ps(p + 16, hi);
						continue;
					}
					if (i == 0)
						_mm512_mask_storeu_ps(p, tail_mask((size_t)h), lo);
					else
						_mm512_stream_ps(p + h - 16, _mm512_permutex2var_ps(
							*cs, _mm512_add_epi32(iota, _mm512_set1_epi32(16 - m)), lo));
					_mm512_stream_ps(p + h, _mm512_permutex2var_ps(
						lo, _mm512_add_epi32(iota, _mm512_set1_epi32(h)), hi));
					*cs = hi;
				}
			}
		/* the last band's tails: lanes h..15 of its high half */
		for (int64_t j = j0; j < j1; j++) {
			float *p = dst + j * ldd + nb - TR_NT_ROWS;
			const int m = (int)(((uintptr_t)p >> 2) & 15);
			if (m)
				_mm512_mask_storeu_ps(p + 16, (__mmask16)~tail_mask((size_t)(16 - m)),
						      carry[j - j0]);
		}
	}
	free(carry);
	if (c16 < cols)
		tr_f32_body(src + c16, lds, dst + c16 * ldd, ldd, nb, cols - c16, 0);
	if (nb < rows)
		tr_f32_body(src + nb * lds, lds, dst + nb, ldd, rows - nb, cols, 0);
	return 1;
}

/* By whole lines and non-temporal stores wherever the layout allows: the
 * bands (aligned rows, or unaligned through the carry), the tile order
 * where the source rows share few L2 sets; the caller fences. */
static void avx512_transpose_nt_f32(const void *s, int64_t lds, void *d, int64_t ldd,
				    int64_t rows, int64_t cols)
{
	const int aligned = !((uintptr_t)d & 63) && !(ldd & 15);

	if (ops_tr_rows_alias(lds))
		tr_f32_tiles(s, lds, d, ldd, rows, cols, aligned);
	else if (aligned)
		ops_avx2_transpose_nt_f32(s, lds, d, ldd, rows, cols);
	else if (((uintptr_t)d & 3) || !tr_f32_bands_carry(s, lds, d, ldd, rows, cols))
		tr_f32_body(s, lds, d, ldd, rows, cols, 0);
}

/* Rows of n bytes by 64-byte moves, the last one overlapping the one
 * before (n >= 64), else two overlapping moves of the largest power of two
 * <= n: no byte outside the row is written. (A masked store of the partial
 * tail cost three times the row's other stores on this core.) */
static void avx512_copy_rows(unsigned char *d, int64_t ldd, const unsigned char *s,
			     int64_t lds, size_t n, int64_t rows)
{
	for (int64_t r = 0; r < rows; r++, d += ldd, s += lds) {
		if (n >= 64) {
			size_t j = 0;

			for (; j + 64 < n; j += 64)
				_mm512_storeu_si512((void *)(d + j), _mm512_loadu_si512(s + j));
			_mm512_storeu_si512((void *)(d + n - 64), _mm512_loadu_si512(s + n - 64));
		} else if (n >= 32) {
			__m256i a = _mm256_loadu_si256((const __m256i *)s);
			__m256i b = _mm256_loadu_si256((const __m256i *)(s + n - 32));
			_mm256_storeu_si256((__m256i *)d, a);
			_mm256_storeu_si256((__m256i *)(d + n - 32), b);
		} else {
			ops_copy_short(d, s, n);
		}
	}
}

static void avx512_stream_bytes(unsigned char *d, const unsigned char *s, size_t n)
{
	size_t head = (64 - ((uintptr_t)d & 63)) & 63;

	if (head >= n) {
		memcpy(d, s, n);
		return;
	}
	if (head) {
		memcpy(d, s, head);
		d += head;
		s += head;
		n -= head;
	}
	for (; n >= 256; n -= 256, d += 256, s += 256) {
		__m512i a = _mm512_loadu_si512(s), b = _mm512_loadu_si512(s + 64);
		__m512i c = _mm512_loadu_si512(s + 128), e = _mm512_loadu_si512(s + 192);
		_mm512_stream_si512((void *)d, a);
		_mm512_stream_si512((void *)(d + 64), b);
		_mm512_stream_si512((void *)(d + 128), c);
		_mm512_stream_si512((void *)(d + 192), e);
	}
	for (; n >= 64; n -= 64, d += 64, s += 64)
		_mm512_stream_si512((void *)d, _mm512_loadu_si512(s));
	if (n)
		memcpy(d, s, n);
}

/* ---- conversions ---------------------------------------------------------------- */

static void avx512_half_to_f32(enum ops_dtype t, const uint16_t *s, float *d, size_t n)
{
	size_t i = 0;

	for (; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xffff : tail_mask(n - i);
		__m256i h = _mm256_maskz_loadu_epi16(m, s + i);
		__m512 f = t == OPS_F16 ? _mm512_cvtph_ps(h) :
			   _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
		_mm512_mask_storeu_ps(d + i, m, f);
	}
}

static void avx512_f32_to_half(enum ops_dtype t, const float *s, uint16_t *d, size_t n)
{
	size_t i = 0;

	for (; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xffff : tail_mask(n - i);
		__m512 v = _mm512_maskz_loadu_ps(m, s + i);
		__m256i h = t == OPS_F16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT) :
			    bf16_pack16(v);
		_mm256_mask_storeu_epi16(d + i, m, h);
	}
}


static void avx512_f32_to_half_rows(enum ops_dtype t, const float *s, int64_t lds, uint16_t *d,
				    int64_t ldd, size_t n, int64_t rows)
{
	for (int64_t r = 0; r < rows; r++)
		avx512_f32_to_half(t, s + r * lds, d + r * ldd, n);
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const struct ops_kern ops_kern_avx512 = {
	.isa = OPS_ISA_AVX512,
	.path = {
		[OPS_KF_CONV] = "avx512 (fma: an unpadded fp32 1x1 at unit stride on planes of 400 or more as one GEMM a plane, 6 channels x 32 positions; one-pass fp32 tiles as 14 pixels x 32 channels (16-channel k-tiles paired) or 28 x 16 along the lanes, else 8x48 pixel-vector direct at unit stride along w, else 12x32 or 14x16; bf16 on amx tdpbf16ps where the cpu has amx-bf16: one-pass tiles on channel-last blocks (an unpadded 1x1 at unit stride as one GEMM a plane, the input as channel pairs), else by channel pairs packed once for all filter taps; winograd F(4x4, 3x3) on 16 lanes, its GEMM 6 tiles x 64 channels)",
		[OPS_KF_GEMM] = "avx512 (fma, 6x32)",
		[OPS_KF_QGEMM] = "avx512 (vnni vpdpbusd; B packed once, 32 columns' 4-byte K quads side by side, a row of A's quad broadcast against them)",
		[OPS_KF_ACT] = "avx512 (fma, 16 lanes)",
		[OPS_KF_PERMUTE] = "avx512 (avx2 8x8 transposes; fp32 one pass, 16x16 in 32-row bands streamed into GLOBAL)",
		[OPS_KF_CONVERT] = "avx512 (vcvtph2ps/vcvtps2ph, integer bf16)",
	},
	.direct_pb = { DPB1, DPB2 },
	.conv_direct = avx512_conv_direct,
	.conv_direct_px = ops_avx512_conv_direct_px,
	.conv_direct_lanes = ops_avx512_conv_direct_lanes,
	.conv_direct_bf16 = ops_avx512_conv_direct_bf16,
	.conv_bf16_ready = ops_amx_bf16_ready,
	.conv_bf16_pack_pairs = ops_avx512_conv_bf16_pack_pairs,
	.conv_bf16_pairs = ops_avx512_conv_bf16_pairs,
	.conv_bf16_cl = ops_avx512_conv_bf16_cl,
	.conv_bf16_cl_row = ops_avx512_conv_bf16_cl_row,
	.conv_bf16_gemm = ops_avx512_conv_bf16_gemm,
	.gemm_nw = 32,
	.conv_gemm = avx512_conv_gemm,
	.conv_f32_gemm = avx512_conv_f32_gemm,
	.wino_in = avx512_wino_in,
	.wino_out = avx512_wino_out,
	.wino_wt = avx512_wino_wt,
	.wino_gemm = avx512_wino_gemm,
	.qgemm = avx512_qgemm,
	.qgemm_colsum = avx512_qgemm_colsum,
	.qgemm_pack_chunk = avx512_qgemm_pack_chunk,
	.qgemm_packed = avx512_qgemm_packed,
	.act_f32 = avx512_act_f32,
	.act_f32_stream = avx512_act_f32_stream,
	.transpose = { ops_avx2_transpose_u8, ops_avx2_transpose_u16, ops_avx2_transpose_f32 },
	.transpose_nt = { NULL, NULL, avx512_transpose_nt_f32 },
	.transpose_f32_dst_rows = ops_avx2_transpose_f32_dst_rows,
	.transpose_half_f32 = ops_avx2_transpose_half_f32,
	.transpose_f32_half = ops_avx2_transpose_f32_half,
	.stream_bytes = avx512_stream_bytes,
	.copy_rows = avx512_copy_rows,
	.half_to_f32 = avx512_half_to_f32,
	.f32_to_half = avx512_f32_to_half,
	.f32_to_half_rows = avx512_f32_to_half_rows,
};
