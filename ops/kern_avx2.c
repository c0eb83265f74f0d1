/* ops/kern_avx2.c: the AVX2 path of every host kernel family (AVX2, FMA,
 * F16C): 8-lane fp32 activations, the 6 x 16 fp32 conv and GEMM
 * microkernels, the exact int8 GEMM by int16 pair products, 8 x 8 register
 * transposes and streamed copies, F16C and integer bf16 conversions. The
 * whole file is compiled for that ISA by the pragma below, whatever the
 * build flags; ops/isa.c reaches it only on a host that has it. */
#include "isa_int.h"
#include "qgemm_int.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

static void avx2_act_f32(enum ops_act a, const float *x, float *y, size_t n);

/* ---- activations: the shared math (kern_act.h) on 8 lanes ---------------------
 * The tail of a run goes through the same code on a zero-padded register, so
 * every element gets the same bits whatever its position. */

#define VF __m256
#define VI __m256i
#define VM __m256
#define V1(c) _mm256_set1_ps(c)
#define VADD _mm256_add_ps
#define VSUB _mm256_sub_ps
#define VMUL _mm256_mul_ps
#define VDIV _mm256_div_ps
#define VMIN _mm256_min_ps
#define VMAX _mm256_max_ps
#define VFMA _mm256_fmadd_ps
#define VFNMA _mm256_fnmadd_ps
#define VROUND(a) _mm256_round_ps((a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VABS(a) _mm256_andnot_ps(V1(-0.0f), (a))
#define VSIGN(a) _mm256_and_ps(V1(-0.0f), (a))
#define VOR _mm256_or_ps
#define VCVTI _mm256_cvtps_epi32
#define VPOW2(n) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32((n), \
				       _mm256_set1_epi32(127)), 23))
#define VHALF(n) _mm256_srai_epi32((n), 1)
#define VISUB _mm256_sub_epi32
#define VEQ(a, b) _mm256_cmp_ps((a), (b), _CMP_EQ_OQ)
#define VGE(a, b) _mm256_cmp_ps((a), (b), _CMP_GE_OQ)
#define VLT(a, b) _mm256_cmp_ps((a), (b), _CMP_LT_OQ)
#define VSEL(m, a, b) _mm256_blendv_ps((a), (b), (m))
#include "kern_act.h"

/* ---- Winograd F(4x4, 3x3): the shared kernels (kern_wino.h) on 8 lanes ---- */
#define VL 8
#define VLD(p) _mm256_loadu_ps(p)
#define VST(p, v) _mm256_storeu_ps((p), (v))
#define VBC(p) _mm256_broadcast_ss(p)
#define VZERO _mm256_setzero_ps()
#define WG_BP 6
#define WG_BK 2
#define WG_NAME(x) avx2_##x
#include "kern_wino.h"

/* One pass of f over n floats: 8 at a time, the tail of m < 8 through a
 * masked load (the other lanes read as 0, never touched in memory) and a
 * masked store, i.e. a zero-padded copy without the two library calls. */
ALWAYS_INLINE void map8(__m256 (*f)(__m256), const float *x, float *y, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		_mm_prefetch((const char *)((uintptr_t)(x + i) + ACT_PF * sizeof *x), _MM_HINT_T0);
		_mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
	}
	if (i < n) {
		__m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)),
						  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
		_mm256_maskstore_ps(y + i, mask, f(_mm256_maskload_ps(x + i, mask)));
	}
}

/* map8 with the whole vectors of y written by non-temporal stores: for an
 * output far larger than the cache, which its consumer will read from DRAM
 * anyway (no read for ownership: a third less DRAM traffic). The head up to
 * y's 32-byte alignment and the tail go through map8. The caller fences. */
ALWAYS_INLINE void map8_stream(__m256 (*f)(__m256), const float *x, float *y, size_t n)
{
	size_t head = (((size_t)32 - ((uintptr_t)y & 31)) & 31) / sizeof *y;
	if (((uintptr_t)y & (sizeof *y - 1)) || head > n) {
		map8(f, x, y, n);
		return;
	}
	map8(f, x, y, head);
	size_t i = head;
	for (; i + 8 <= n; i += 8)
		_mm256_stream_ps(y + i, f(_mm256_loadu_ps(x + i)));
	map8(f, x + i, y + i, n - i);
}

static void map_relu(const float *x, float *y, size_t n)
{
	/* memory-bound: four vectors per iteration keep more loads in flight */
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
		__m256 c = _mm256_loadu_ps(x + i + 16), d = _mm256_loadu_ps(x + i + 24);
		_mm256_storeu_ps(y + i, v_relu(a));
		_mm256_storeu_ps(y + i + 8, v_relu(b));
		_mm256_storeu_ps(y + i + 16, v_relu(c));
		_mm256_storeu_ps(y + i + 24, v_relu(d));
	}
	map8(v_relu, x + i, y + i, n - i);
}

/* The cases of the functions built on exp, each mapped by map (map8 or
 * map8_stream): shared by the two dispatchers below. */
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

/* ops_act_f32 with streamed stores (map8_stream); the caller fences. relu
 * streams a vector at a time: it is bound by DRAM, not by the loop. */
static void avx2_act_f32_stream(enum ops_act a, const float *x, float *y, size_t n)
{
	switch (a) {
	case OPS_ACT_RELU:
		map8_stream(v_relu, x, y, n);
		return;
	ACT_EXP_CASES(map8_stream, x, y, n);
	case OPS_ACT_NONE:
	case OPS_NACTS:
		break;
	}
	avx2_act_f32(a, x, y, n);
}

static void avx2_act_f32(enum ops_act a, const float *x, float *y, size_t n)
{
	switch (a) {
	case OPS_ACT_RELU:
		map_relu(x, y, n);
		return;
	ACT_EXP_CASES(map8, x, y, n);
	case OPS_ACT_NONE:
	case OPS_NACTS:
		break;
	}
	/* none (and anything unknown) is the identity */
	if (x != y)
		memmove(y, x, n * sizeof *y);
}

/* ---- conv2d and the fp32 GEMM: register-blocked microkernels ---------------- */


/* Direct: the 6 pixels broadcast their input value for term i (a channel,
 * filter row and column folded into off[i]); the 16 output channels of the
 * packed weights wp are two vectors. -ffp-contract=off is global, so the
 * FMAs are explicit. */
static void avx2_conv_direct(const float *const *pix, const int32_t *off, int64_t nterm,
			     const float *wp, int64_t wstride, float *out)
{
	__m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
	__m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
	__m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
	__m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
	__m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
	__m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
	const float *p0 = pix[0], *p1 = pix[1], *p2 = pix[2];
	const float *p3 = pix[3], *p4 = pix[4], *p5 = pix[5];
	int64_t i;

	(void)wstride; /* 16 channels: one panel */
	for (i = 0; i < nterm; i++) {
		int32_t o = off[i];
		__m256 w0 = _mm256_loadu_ps(wp);
		__m256 w1 = _mm256_loadu_ps(wp + 8);
		__m256 b;

		wp += 16;
		b = _mm256_broadcast_ss(p0 + o);
		c00 = _mm256_fmadd_ps(b, w0, c00);
		c01 = _mm256_fmadd_ps(b, w1, c01);
		b = _mm256_broadcast_ss(p1 + o);
		c10 = _mm256_fmadd_ps(b, w0, c10);
		c11 = _mm256_fmadd_ps(b, w1, c11);
		b = _mm256_broadcast_ss(p2 + o);
		c20 = _mm256_fmadd_ps(b, w0, c20);
		c21 = _mm256_fmadd_ps(b, w1, c21);
		b = _mm256_broadcast_ss(p3 + o);
		c30 = _mm256_fmadd_ps(b, w0, c30);
		c31 = _mm256_fmadd_ps(b, w1, c31);
		b = _mm256_broadcast_ss(p4 + o);
		c40 = _mm256_fmadd_ps(b, w0, c40);
		c41 = _mm256_fmadd_ps(b, w1, c41);
		b = _mm256_broadcast_ss(p5 + o);
		c50 = _mm256_fmadd_ps(b, w0, c50);
		c51 = _mm256_fmadd_ps(b, w1, c51);
	}
	_mm256_storeu_ps(out + 0, c00);
	_mm256_storeu_ps(out + 8, c01);
	_mm256_storeu_ps(out + 16, c10);
	_mm256_storeu_ps(out + 24, c11);
	_mm256_storeu_ps(out + 32, c20);
	_mm256_storeu_ps(out + 40, c21);
	_mm256_storeu_ps(out + 48, c30);
	_mm256_storeu_ps(out + 56, c31);
	_mm256_storeu_ps(out + 64, c40);
	_mm256_storeu_ps(out + 72, c41);
	_mm256_storeu_ps(out + 80, c50);
	_mm256_storeu_ps(out + 88, c51);
}

/* GEMM: 6 rows of the packed A panel broadcast, 16 columns of the packed B
 * panel (the im2col matrix) as two vectors; rows of out are ldo apart. */
static void avx2_conv_gemm(const float *a, const float *b, int64_t bstride, int64_t kdim,
			   float *out, int64_t ldo, int accumulate)
{
	__m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
	__m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
	__m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
	__m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
	__m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
	__m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
	int64_t i;

	(void)bstride; /* 16 columns: one panel */
	for (i = 0; i < kdim; i++) {
		__m256 b0 = _mm256_loadu_ps(b);
		__m256 b1 = _mm256_loadu_ps(b + 8);
		__m256 v;

		b += 16;
		v = _mm256_broadcast_ss(a + 0);
		c00 = _mm256_fmadd_ps(v, b0, c00);
		c01 = _mm256_fmadd_ps(v, b1, c01);
		v = _mm256_broadcast_ss(a + 1);
		c10 = _mm256_fmadd_ps(v, b0, c10);
		c11 = _mm256_fmadd_ps(v, b1, c11);
		v = _mm256_broadcast_ss(a + 2);
		c20 = _mm256_fmadd_ps(v, b0, c20);
		c21 = _mm256_fmadd_ps(v, b1, c21);
		v = _mm256_broadcast_ss(a + 3);
		c30 = _mm256_fmadd_ps(v, b0, c30);
		c31 = _mm256_fmadd_ps(v, b1, c31);
		v = _mm256_broadcast_ss(a + 4);
		c40 = _mm256_fmadd_ps(v, b0, c40);
		c41 = _mm256_fmadd_ps(v, b1, c41);
		v = _mm256_broadcast_ss(a + 5);
		c50 = _mm256_fmadd_ps(v, b0, c50);
		c51 = _mm256_fmadd_ps(v, b1, c51);
		a += 6;
	}
	if (accumulate) {
		c00 = _mm256_add_ps(c00, _mm256_loadu_ps(out));
		c01 = _mm256_add_ps(c01, _mm256_loadu_ps(out + 8));
		c10 = _mm256_add_ps(c10, _mm256_loadu_ps(out + ldo));
		c11 = _mm256_add_ps(c11, _mm256_loadu_ps(out + ldo + 8));
		c20 = _mm256_add_ps(c20, _mm256_loadu_ps(out + 2 * ldo));
		c21 = _mm256_add_ps(c21, _mm256_loadu_ps(out + 2 * ldo + 8));
		c30 = _mm256_add_ps(c30, _mm256_loadu_ps(out + 3 * ldo));
		c31 = _mm256_add_ps(c31, _mm256_loadu_ps(out + 3 * ldo + 8));
		c40 = _mm256_add_ps(c40, _mm256_loadu_ps(out + 4 * ldo));
		c41 = _mm256_add_ps(c41, _mm256_loadu_ps(out + 4 * ldo + 8));
		c50 = _mm256_add_ps(c50, _mm256_loadu_ps(out + 5 * ldo));
		c51 = _mm256_add_ps(c51, _mm256_loadu_ps(out + 5 * ldo + 8));
	}
	_mm256_storeu_ps(out, c00);
	_mm256_storeu_ps(out + 8, c01);
	_mm256_storeu_ps(out + ldo, c10);
	_mm256_storeu_ps(out + ldo + 8, c11);
	_mm256_storeu_ps(out + 2 * ldo, c20);
	_mm256_storeu_ps(out + 2 * ldo + 8, c21);
	_mm256_storeu_ps(out + 3 * ldo, c30);
	_mm256_storeu_ps(out + 3 * ldo + 8, c31);
	_mm256_storeu_ps(out + 4 * ldo, c40);
	_mm256_storeu_ps(out + 4 * ldo + 8, c41);
	_mm256_storeu_ps(out + 5 * ldo, c50);
	_mm256_storeu_ps(out + 5 * ldo + 8, c51);
}

/* ---- qgemm: the exact kernel ----------------------------------------------------- */

/* [sum(v0), ..., sum(v7)] of eight int32x8 vectors. */
ALWAYS_INLINE __m256i qg_hsum8(const __m256i v[8])
{
	__m256i s01 = _mm256_hadd_epi32(v[0], v[1]), s23 = _mm256_hadd_epi32(v[2], v[3]);
	__m256i s45 = _mm256_hadd_epi32(v[4], v[5]), s67 = _mm256_hadd_epi32(v[6], v[7]);
	__m256i s0 = _mm256_hadd_epi32(s01, s23), s1 = _mm256_hadd_epi32(s45, s67);
	return _mm256_add_epi32(_mm256_permute2x128_si256(s0, s1, 0x20),
				_mm256_permute2x128_si256(s0, s1, 0x31));
}

/* out[r] += sum_{q<len} a16[r*KC + q] * b[q] for r < R (R constant after
 * inlining, so the accumulators stay in registers). Each B byte is loaded
 * and widened once and used for R rows. */
ALWAYS_INLINE void qg_dot_rows(int R, const int16_t *a16, const int8_t *b, int64_t len,
			   int32_t *out)
{
	__m256i acc[8];
	int32_t s[8];
	int64_t q = 0;

	for (int r = 0; r < 8; r++)
		acc[r] = _mm256_setzero_si256();
	for (; q + 16 <= len; q += 16) {
		__m256i bv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + q)));
#pragma GCC unroll 8
		for (int r = 0; r < R; r++) {
			__m256i av = _mm256_load_si256((const __m256i *)(a16 + r * OPS_QGEMM_KC + q));
			acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(av, bv));
		}
	}
	_mm256_storeu_si256((__m256i *)s, qg_hsum8(acc));
	for (int r = 0; r < R; r++) {
		int32_t x = s[r];
		for (int64_t t = q; t < len; t++)
			x += (int32_t)a16[r * OPS_QGEMM_KC + t] * b[t];
		out[r] += x;
	}
}

static void qg_dot_block(int R, const int16_t *a16, const int8_t *b, int64_t len,
			 int32_t *out)
{
	switch (R) {
	case 8: qg_dot_rows(8, a16, b, len, out); break;
	case 7: qg_dot_rows(7, a16, b, len, out); break;
	case 6: qg_dot_rows(6, a16, b, len, out); break;
	case 5: qg_dot_rows(5, a16, b, len, out); break;
	case 4: qg_dot_rows(4, a16, b, len, out); break;
	case 3: qg_dot_rows(3, a16, b, len, out); break;
	case 2: qg_dot_rows(2, a16, b, len, out); break;
	default: qg_dot_rows(1, a16, b, len, out); break;
	}
}

/* Widens a[r*lda + c0 .. c0+len) of every row to int16 rows of stride KC. */
static void qg_widen(enum ops_dtype at, const void *a, int64_t lda, int64_t m,
		     int64_t c0, int64_t len, int16_t *a16)
{
	for (int64_t r = 0; r < m; r++) {
		int16_t *dst = a16 + r * OPS_QGEMM_KC;
		int64_t q = 0;
		if (at == OPS_U8) {
			const uint8_t *src = (const uint8_t *)a + r * lda + c0;
			for (; q + 16 <= len; q += 16)
				_mm256_store_si256((__m256i *)(dst + q), _mm256_cvtepu8_epi16(
					_mm_loadu_si128((const __m128i *)(src + q))));
			for (; q < len; q++)
				dst[q] = src[q];
		} else {
			const int8_t *src = (const int8_t *)a + r * lda + c0;
			for (; q + 16 <= len; q += 16)
				_mm256_store_si256((__m256i *)(dst + q), _mm256_cvtepi8_epi16(
					_mm_loadu_si128((const __m128i *)(src + q))));
			for (; q < len; q++)
				dst[q] = src[q];
		}
	}
}

static void avx2_qgemm_colsum(const int8_t *b, int64_t ldb, int64_t tn, int64_t kk, int32_t *cs);

static void avx2_qgemm(enum ops_dtype at, const void *a, int64_t lda, const int8_t *b,
		       int64_t ldb, int64_t m, int64_t tn, int64_t kk, int32_t *c, int32_t *cs,
		       int16_t *a16)
{
	int32_t sums[8];

	memset(c, 0, (size_t)(m * tn) * sizeof *c);
	if (cs)
		memset(cs, 0, (size_t)tn * sizeof *cs);
	for (int64_t c0 = 0; c0 < kk; c0 += OPS_QGEMM_KC) {
		int64_t len = kk - c0 < OPS_QGEMM_KC ? kk - c0 : OPS_QGEMM_KC;
		qg_widen(at, a, lda, m, c0, len, a16);
		/* j outer: a B chunk is read from memory once and reused by every
		 * row block from L1; A's widened chunk (m*2 KiB) stays in L1/L2 */
		for (int64_t j = 0; j < tn; j++) {
			const int8_t *bj = b + j * ldb + c0;
			/* the row's next chunk (this tile's, or the next tile's
			 * first: the caller walks K tiles in order) into L2 a
			 * chunk ahead: a B read in place starts a new page every
			 * 1 KiB run, which the hardware prefetcher does not
			 * follow (a prefetch never faults, past the end is
			 * harmless) */
			for (int64_t o = 0; o < len; o += 64)
				_mm_prefetch((const char *)(bj + len + o), _MM_HINT_T1);
			if (cs) { /* the chunk's column sum while it is in L1 */
				int32_t part;
				avx2_qgemm_colsum(bj, len, 1, len, &part);
				cs[j] += part;
			}
			for (int64_t i0 = 0; i0 < m; i0 += 8) {
				int R = m - i0 < 8 ? (int)(m - i0) : 8;
				memset(sums, 0, sizeof sums);
				qg_dot_block(R, a16 + i0 * OPS_QGEMM_KC, bj, len, sums);
				for (int r = 0; r < R; r++)
					c[(i0 + r) * tn + j] += sums[r];
			}
		}
	}
}

static void avx2_qgemm_colsum(const int8_t *b, int64_t ldb, int64_t tn, int64_t kk, int32_t *cs)
{
	const __m256i flip = _mm256_set1_epi8((char)0x80);

	for (int64_t j = 0; j < tn; j++) {
		const int8_t *bj = b + j * ldb;
		__m256i s = _mm256_setzero_si256();
		int64_t q = 0, tot;
		uint64_t l[4];
		/* b ^ 0x80 read as u8 is b + 128; SAD against zero sums 8 bytes */
		for (; q + 32 <= kk; q += 32) {
			__m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(bj + q)), flip);
			s = _mm256_add_epi64(s, _mm256_sad_epu8(v, _mm256_setzero_si256()));
		}
		_mm256_storeu_si256((__m256i *)l, s);
		tot = (int64_t)(l[0] + l[1] + l[2] + l[3]) - 128 * q;
		for (; q < kk; q++)
			tot += bj[q];
		cs[j] = (int32_t)tot;
	}
}

/* ---- permute: transposes and streamed copies ------------------------------------ */

/* The 8 x 8 transpose of rows r[0..8) into o[0..8) (o[k] = column k). */
static inline __attribute__((always_inline)) void tr8x8_regs(const __m256 r[8], __m256 o[8])
{
	const __m256 r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
	const __m256 r4 = r[4], r5 = r[5], r6 = r[6], r7 = r[7];
	__m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
	__m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
	__m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
	__m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
	__m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
	__m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
	__m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
	__m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);

	o[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
	o[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
	o[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
	o[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
	o[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
	o[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
	o[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
	o[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* dst[j * ldd + i] = src[i * lds + j] for an 8 x 8 block of 4-byte
 * elements, transposed in AVX2 registers (the loops unrolled: rolled, gcc
 * kept the two arrays on the stack). */
static inline __attribute__((always_inline)) void tr8x8_f32(const float *s, int64_t lds,
							      float *d, int64_t ldd)
{
	__m256 r[8], o[8];

#pragma GCC unroll 8
	for (int k = 0; k < 8; k++)
		r[k] = _mm256_loadu_ps(s + k * lds);
	tr8x8_regs(r, o);
#pragma GCC unroll 8
	for (int k = 0; k < 8; k++)
		_mm256_storeu_ps(d + k * ldd, o[k]);
}

/* Transposes over 8 x 8 blocks that may convert on the way: blk(bf, src,
 * lds, dst, ldd, i, j) moves the block at source rows i..i+7, columns
 * j..j+7, one(bf, v) a single element. Destination rows eight at a time
 * (j), blocks along them (i). Where rows and cols are 8 or more, a ragged
 * edge is one more block flush with the end, overlapping the one before
 * (those elements written twice, with the same values): a winograd patch
 * row of 30 columns spent a fifth of its elements in a scalar tail. Below
 * 8, element by element. */
#define TR_BLOCKS(name, blk, stype, dtype, one)                                           \
	static inline __attribute__((always_inline)) void name(int bf, const stype *src,   \
								int64_t lds, dtype *dst,   \
								int64_t ldd, int64_t rows, \
								int64_t cols)              \
	{                                                                                  \
		if (rows < 8 || cols < 8) {                                                \
			for (int64_t j = 0; j < cols; j++)                                 \
				for (int64_t i = 0; i < rows; i++)                         \
					dst[j * ldd + i] = one(bf, src[i * lds + j]);      \
			return;                                                            \
		}                                                                          \
		for (int64_t j0 = 0; j0 < cols; j0 += 8) {                                 \
			const int64_t j = j0 + 8 <= cols ? j0 : cols - 8;                  \
			for (int64_t i0 = 0; i0 < rows; i0 += 8)                           \
				blk(bf, src, lds, dst, ldd, i0 + 8 <= rows ? i0 : rows - 8, j); \
		}                                                                          \
	}

/* The same for 2-byte elements: an 8 x 8 block of uint16 in SSE2 registers
 * (three rounds of interleaves: 16-, 32- and 64-bit). */
static inline __attribute__((always_inline)) void tr8x8_u16(const uint16_t *s, int64_t lds,
							      uint16_t *d, int64_t ldd)
{
	__m128i r[8], t[8], u[8];

	for (int k = 0; k < 8; k++)
		r[k] = _mm_loadu_si128((const __m128i *)(s + k * lds));
	for (int k = 0; k < 4; k++) {
		t[2 * k] = _mm_unpacklo_epi16(r[2 * k], r[2 * k + 1]);
		t[2 * k + 1] = _mm_unpackhi_epi16(r[2 * k], r[2 * k + 1]);
	}
	/* u[0..3]: columns 0-1, 2-3, 4-5, 6-7 of rows 0-3; u[4..7] of rows 4-7 */
	for (int h = 0; h < 2; h++) {
		const __m128i *tt = t + 4 * h;
		u[4 * h] = _mm_unpacklo_epi32(tt[0], tt[2]);
		u[4 * h + 1] = _mm_unpackhi_epi32(tt[0], tt[2]);
		u[4 * h + 2] = _mm_unpacklo_epi32(tt[1], tt[3]);
		u[4 * h + 3] = _mm_unpackhi_epi32(tt[1], tt[3]);
	}
	for (int k = 0; k < 4; k++) {
		_mm_storeu_si128((__m128i *)(d + (2 * k) * ldd), _mm_unpacklo_epi64(u[k], u[k + 4]));
		_mm_storeu_si128((__m128i *)(d + (2 * k + 1) * ldd),
				 _mm_unpackhi_epi64(u[k], u[k + 4]));
	}
}

/* The same for bytes: an 8 x 8 block of uint8, each row in the low half of
 * an SSE2 register, interleaved at 8, 16 and 32 bits; each register then
 * holds two destination rows. */
static inline __attribute__((always_inline)) void tr8x8_u8(const uint8_t *s, int64_t lds,
							     uint8_t *d, int64_t ldd)
{
	__m128i r[8], t[4], u[4];

	for (int k = 0; k < 8; k++)
		r[k] = _mm_loadl_epi64((const __m128i *)(s + k * lds));
	for (int k = 0; k < 4; k++)
		t[k] = _mm_unpacklo_epi8(r[2 * k], r[2 * k + 1]);
	u[0] = _mm_unpacklo_epi16(t[0], t[1]);
	u[1] = _mm_unpackhi_epi16(t[0], t[1]);
	u[2] = _mm_unpacklo_epi16(t[2], t[3]);
	u[3] = _mm_unpackhi_epi16(t[2], t[3]);
	for (int k = 0; k < 2; k++) {
		__m128i lo = _mm_unpacklo_epi32(u[k], u[k + 2]); /* columns 4k, 4k+1 */
		__m128i hi = _mm_unpackhi_epi32(u[k], u[k + 2]); /* columns 4k+2, 4k+3 */
		_mm_storel_epi64((__m128i *)(d + (4 * k) * ldd), lo);
		_mm_storel_epi64((__m128i *)(d + (4 * k + 1) * ldd), _mm_unpackhi_epi64(lo, lo));
		_mm_storel_epi64((__m128i *)(d + (4 * k + 2) * ldd), hi);
		_mm_storel_epi64((__m128i *)(d + (4 * k + 3) * ldd), _mm_unpackhi_epi64(hi, hi));
	}
}

/* TR_SRC_RUN bytes of each source row per pass: 16 source rows are read as
 * contiguous runs of up to 2 KiB, 16 sequential streams the prefetchers
 * follow, instead of 64 x 64 blocks that hop between 64 rows every 256 bytes
 * (the gather of a transposing permute was bound by the latency of those
 * misses). The destination block stays within 2 KiB x 16 (L2). Each step
 * transposes 16 rows x 8 columns as two 8 x 8 register blocks; the ragged
 * edges are copied element by element. (A cache-blocked scalar loop for
 * 2-byte elements ran at a third of the fp32 rate on half the bytes.) */
#define TR_SRC_RUN 2048
#define DEFINE_TRANSPOSE(name, type, block8)                                            \
	static void name(const type *src, int64_t lds, type *dst, int64_t ldd,           \
			 int64_t rows, int64_t cols)                                      \
	{                                                                                \
		const int64_t run = TR_SRC_RUN / (int64_t)sizeof(type);                  \
		for (int64_t j0 = 0; j0 < cols; j0 += run) {                             \
			int64_t j1 = j0 + run < cols ? j0 + run : cols;                  \
			int64_t j8 = j0 + (j1 - j0) / 8 * 8;                             \
			int64_t i = 0;                                                   \
			for (; i + 16 <= rows; i += 16)                                  \
				for (int64_t j = j0; j < j8; j += 8) {                   \
					block8(src + i * lds + j, lds, dst + j * ldd + i, ldd); \
					block8(src + (i + 8) * lds + j, lds,             \
					       dst + j * ldd + i + 8, ldd);              \
				}                                                        \
			for (; i + 8 <= rows; i += 8)                                    \
				for (int64_t j = j0; j < j8; j += 8)                     \
					block8(src + i * lds + j, lds, dst + j * ldd + i, ldd); \
			for (int64_t k = 0; k < i; k++) /* the columns past j8 */        \
				for (int64_t j = j8; j < j1; j++)                        \
					dst[j * ldd + k] = src[k * lds + j];             \
			for (; i < rows; i++) /* the rows past the last 8 */              \
				for (int64_t j = j0; j < j1; j++)                        \
					dst[j * ldd + i] = src[i * lds + j];             \
		}                                                                        \
	}
DEFINE_TRANSPOSE(transpose_f32, float, tr8x8_f32)
DEFINE_TRANSPOSE(transpose_u16, uint16_t, tr8x8_u16)
DEFINE_TRANSPOSE(transpose_u8, uint8_t, tr8x8_u8)

/* The streaming transpose (ops_kern.transpose_nt[2]) on AVX2, which the
 * AVX-512 table shares for 64-byte aligned destination rows: each step
 * moves 32 source rows x 8 columns through an L1 buffer, and each of the 8
 * destination rows gets its 32 elements, two whole lines, by non-temporal
 * stores. Each source row is prefetched TR2_PF bytes ahead into L2 (T1):
 * on a Zen 4 core the [4096, 70000] plane took 66-72 ms so (memcpy of its
 * bytes 84-88), 119-137 with a 256-byte prefetch into L1, and the AVX-512
 * path's 16 x 16 bands 100-101 (zmm shuffles issue at half rate there; on
 * the Intel VM the two ran within the noise of each other: 0.847 and
 * 0.863 of memcpy in one bench). Destination rows that are not 64-byte
 * aligned, and source rows on few L2 sets (ops_tr_rows_alias), take the
 * tile order with ordinary stores; so do the rows past the last band and the columns past
 * the last 8, whose lines no band touches. The caller fences. */
#define TR2_ROWS 32
#define TR2_PF 2048
static inline __attribute__((always_inline)) void tr2_band_step(const float *src, int64_t lds,
								 float *buf)
{
	for (int b = 0; b < TR2_ROWS; b += 8) {
		for (int k = 0; k < 8; k++)
			_mm_prefetch((const char *)((uintptr_t)(src + (b + k) * lds) + TR2_PF),
				     _MM_HINT_T1);
		tr8x8_f32(src + b * lds, lds, buf + b, TR2_ROWS);
	}
}

void ops_avx2_transpose_nt_f32(const void *s, int64_t lds, void *d, int64_t ldd, int64_t rows,
			       int64_t cols)
{
	const float *src = s;
	float *dst = d;
	float buf[8 * TR2_ROWS] __attribute__((aligned(32)));
	const int64_t c8 = cols / 8 * 8;
	int64_t i = 0;

	if (((uintptr_t)dst & 63) || (ldd & 15) || ops_tr_rows_alias(lds)) {
		transpose_f32(src, lds, dst, ldd, rows, cols);
		return;
	}
	for (; i + TR2_ROWS <= rows; i += TR2_ROWS) {
		for (int64_t j = 0; j < c8; j += 8) {
			float *p = dst + j * ldd + i;

			tr2_band_step(src + i * lds + j, lds, buf);
			for (int k = 0; k < 8; k++)
				for (int b = 0; b < TR2_ROWS; b += 8)
					_mm256_stream_ps(p + k * ldd + b, _mm256_load_ps(buf + k * TR2_ROWS + b));
		}
		if (c8 < cols)
			transpose_f32(src + i * lds + c8, lds, dst + c8 * ldd + i, ldd, TR2_ROWS,
				      cols - c8);
	}
	if (i < rows)
		transpose_f32(src + i * lds, lds, dst + i, ldd, rows - i, cols);
}

void ops_avx2_transpose_u8(const void *s, int64_t lds, void *d, int64_t ldd, int64_t r, int64_t c)
{
	transpose_u8(s, lds, d, ldd, r, c);
}

void ops_avx2_transpose_u16(const void *s, int64_t lds, void *d, int64_t ldd, int64_t r, int64_t c)
{
	transpose_u16(s, lds, d, ldd, r, c);
}

void ops_avx2_transpose_f32(const void *s, int64_t lds, void *d, int64_t ldd, int64_t r, int64_t c)
{
	transpose_f32(s, lds, d, ldd, r, c);
}

static inline __attribute__((always_inline)) void blk_f32(int bf, const float *src, int64_t lds,
							   float *dst, int64_t ldd, int64_t i,
							   int64_t j)
{
	(void)bf;
	tr8x8_f32(src + i * lds + j, lds, dst + j * ldd + i, ldd);
}

static inline __attribute__((always_inline)) float f32_same(int bf, float v)
{
	(void)bf;
	return v;
}

TR_BLOCKS(tr_f32_dst_rows, blk_f32, float, float, f32_same)

/* ops_kern.transpose_f32_dst_rows: TR_BLOCKS' order, eight destination
 * rows at a time. */
void ops_avx2_transpose_f32_dst_rows(const void *s, int64_t lds, void *d, int64_t ldd,
				     int64_t rows, int64_t cols)
{
	tr_f32_dst_rows(0, s, lds, d, ldd, rows, cols);
}

/* Rows of n bytes by 32-byte moves, the last one overlapping the one before
 * (n >= 32), or two overlapping moves of the largest power of two <= n. */
static void avx2_copy_rows(unsigned char *d, int64_t ldd, const unsigned char *s, int64_t lds,
			   size_t n, int64_t rows)
{
	for (int64_t r = 0; r < rows; r++, d += ldd, s += lds) {
		if (n >= 32) {
			size_t j = 0;

			for (; j + 32 < n; j += 32)
				_mm256_storeu_si256((__m256i *)(d + j),
						    _mm256_loadu_si256((const __m256i *)(s + j)));
			_mm256_storeu_si256((__m256i *)(d + n - 32),
					    _mm256_loadu_si256((const __m256i *)(s + n - 32)));
		} else {
			ops_copy_short(d, s, n);
		}
	}
}

/* memcpy(d, s, n) with the whole 64-byte lines of d written by
 * non-temporal stores (the partial lines at either end by ordinary ones, so
 * no line is written both ways). The caller fences. */
static void avx2_stream_bytes(unsigned char *d, const unsigned char *s, size_t n)
{
	size_t head = (64 - ((uintptr_t)d & 63)) & 63;

	if (head >= n) {
		memcpy(d, s, n);
		return;
	}
	if (head) { /* (no library calls for empty ends: rows are often aligned) */
		memcpy(d, s, head);
		d += head;
		s += head;
		n -= head;
	}
	for (; n >= 128; n -= 128, d += 128, s += 128) {
		__m256i a = _mm256_loadu_si256((const __m256i *)s);
		__m256i b = _mm256_loadu_si256((const __m256i *)(s + 32));
		__m256i c = _mm256_loadu_si256((const __m256i *)(s + 64));
		__m256i e = _mm256_loadu_si256((const __m256i *)(s + 96));
		_mm256_stream_si256((__m256i *)d, a);
		_mm256_stream_si256((__m256i *)(d + 32), b);
		_mm256_stream_si256((__m256i *)(d + 64), c);
		_mm256_stream_si256((__m256i *)(d + 96), e);
	}
	if (n >= 64) {
		__m256i a = _mm256_loadu_si256((const __m256i *)s);
		__m256i b = _mm256_loadu_si256((const __m256i *)(s + 32));
		_mm256_stream_si256((__m256i *)d, a);
		_mm256_stream_si256((__m256i *)(d + 32), b);
		d += 64;
		s += 64;
		n -= 64;
	}
	if (n)
		memcpy(d, s, n);
}

/* ---- conversions ------------------------------------------------------ */

/* 8 fp32 lanes -> 8 bf16 in the low 128 bits, same rounding as the scalar. */
static __m128i bf16_pack8(__m256 v)
{
	const __m256i u = _mm256_castps_si256(v);
	const __m256i one = _mm256_set1_epi32(1);
	const __m256i bias = _mm256_set1_epi32(0x7fff);
	__m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
	__m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(bias, lsb)), 16);
	__m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
	__m256i isnan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
	__m256i r = _mm256_blendv_epi8(rounded, quiet, isnan);
	/* values are <= 0xffff: pack with unsigned saturation (per 128-bit lane),
	 * then put the two lanes' halves next to each other */
	__m256i p = _mm256_packus_epi32(r, r);
	p = _mm256_permute4x64_epi64(p, 0x08);
	return _mm256_castsi256_si128(p);
}

static void avx2_half_to_f32(enum ops_dtype t, const uint16_t *s, float *dst, size_t n)
{
	size_t i = 0;

	if (t == OPS_F16) {
		for (; i + 8 <= n; i += 8) {
			__m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
			_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
		}
		for (; i < n; i++)
			dst[i] = ops_f16_to_f32(s[i]);
		return;
	}
	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		__m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
		_mm256_storeu_ps(dst + i, _mm256_castsi256_ps(w));
	}
	for (; i < n; i++)
		dst[i] = ops_bf16_to_f32(s[i]);
}

static void avx2_f32_to_half(enum ops_dtype t, const float *src, uint16_t *d, size_t n)
{
	size_t i = 0;

	if (t == OPS_F16) {
		for (; i + 8 <= n; i += 8) {
			__m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), 0);
			_mm_storeu_si128((__m128i *)(void *)(d + i), h);
		}
		for (; i < n; i++)
			d[i] = ops_f32_to_f16(src[i]);
		return;
	}
	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(void *)(d + i), bf16_pack8(_mm256_loadu_ps(src + i)));
	for (; i < n; i++)
		d[i] = ops_f32_to_bf16(src[i]);
}

/* ---- transposes that convert (ops_kern.transpose_half_f32, _f32_half) --- */

static inline __attribute__((always_inline)) __m256 half8_widen(int bf, const uint16_t *s)
{
	__m128i h = _mm_loadu_si128((const __m128i *)(const void *)s);

	return bf ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) :
		    _mm256_cvtph_ps(h);
}

static inline __attribute__((always_inline)) __m128i half8_round(int bf, __m256 v)
{
	return bf ? bf16_pack8(v) : _mm256_cvtps_ph(v, 0);
}

static float half1_widen(int bf, uint16_t h)
{
	return bf ? ops_bf16_to_f32(h) : ops_f16_to_f32(h);
}

static uint16_t half1_round(int bf, float f)
{
	return bf ? ops_f32_to_bf16(f) : ops_f32_to_f16(f);
}

/* One 8 x 8 block of each: rows i..i+7, columns j..j+7 of the source. */
static inline __attribute__((always_inline)) void blk_half_f32(int bf, const uint16_t *src,
								int64_t lds, float *dst,
								int64_t ldd, int64_t i, int64_t j)
{
	__m256 r[8], o[8];

#pragma GCC unroll 8
	for (int k = 0; k < 8; k++)
		r[k] = half8_widen(bf, src + (i + k) * lds + j);
	tr8x8_regs(r, o);
#pragma GCC unroll 8
	for (int k = 0; k < 8; k++)
		_mm256_storeu_ps(dst + (j + k) * ldd + i, o[k]);
}

static inline __attribute__((always_inline)) void blk_f32_half(int bf, const float *src,
								int64_t lds, uint16_t *dst,
								int64_t ldd, int64_t i, int64_t j)
{
	__m256 r[8], o[8];

#pragma GCC unroll 8
	for (int k = 0; k < 8; k++)
		r[k] = _mm256_loadu_ps(src + (i + k) * lds + j);
	tr8x8_regs(r, o);
#pragma GCC unroll 8
	for (int k = 0; k < 8; k++)
		_mm_storeu_si128((__m128i *)(void *)(dst + (j + k) * ldd + i), half8_round(bf, o[k]));
}

TR_BLOCKS(tr_half_f32, blk_half_f32, uint16_t, float, half1_widen)
TR_BLOCKS(tr_f32_half, blk_f32_half, float, uint16_t, half1_round)

void ops_avx2_transpose_half_f32(enum ops_dtype t, const uint16_t *s, int64_t lds, float *d,
				 int64_t ldd, int64_t r, int64_t c)
{
	if (t == OPS_BF16)
		tr_half_f32(1, s, lds, d, ldd, r, c);
	else
		tr_half_f32(0, s, lds, d, ldd, r, c);
}

void ops_avx2_transpose_f32_half(enum ops_dtype t, const float *s, int64_t lds, uint16_t *d,
				 int64_t ldd, int64_t r, int64_t c)
{
	if (t == OPS_BF16)
		tr_f32_half(1, s, lds, d, ldd, r, c);
	else
		tr_f32_half(0, s, lds, d, ldd, r, c);
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const struct ops_kern ops_kern_avx2 = {
	.isa = OPS_ISA_AVX2,
	.path = {
		[OPS_KF_CONV] = "avx2 (fma, 6x16 direct; winograd F(4x4, 3x3) on 8 lanes, its GEMM 6 tiles x 16 channels)",
		[OPS_KF_GEMM] = "avx2 (fma, 6x16)",
		[OPS_KF_QGEMM] = "avx2 (vpmaddwd int16 pairs)",
		[OPS_KF_ACT] = "avx2 (fma, 8 lanes)",
		[OPS_KF_PERMUTE] = "avx2 (8x8 transposes; fp32 one pass, 32-row bands streamed into GLOBAL)",
		[OPS_KF_CONVERT] = "avx2 (f16c, integer bf16)",
	},
	.direct_pb = { 6, 0 },
	.conv_direct = avx2_conv_direct,
	.gemm_nw = 16,
	.conv_gemm = avx2_conv_gemm,
	.wino_in = avx2_wino_in,
	.wino_out = avx2_wino_out,
	.wino_wt = avx2_wino_wt,
	.wino_gemm = avx2_wino_gemm,
	.qgemm = avx2_qgemm,
	.qgemm_colsum = avx2_qgemm_colsum,
	.act_f32 = avx2_act_f32,
	.act_f32_stream = avx2_act_f32_stream,
	.transpose = { ops_avx2_transpose_u8, ops_avx2_transpose_u16, ops_avx2_transpose_f32 },
	.transpose_nt = { NULL, NULL, ops_avx2_transpose_nt_f32 },
	.transpose_f32_dst_rows = ops_avx2_transpose_f32_dst_rows,
	.transpose_half_f32 = ops_avx2_transpose_half_f32,
	.transpose_f32_half = ops_avx2_transpose_f32_half,
	.stream_bytes = avx2_stream_bytes,
	.copy_rows = avx2_copy_rows,
	.half_to_f32 = avx2_half_to_f32,
	.f32_to_half = avx2_f32_to_half,
};
