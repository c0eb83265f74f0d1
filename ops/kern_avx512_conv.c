/* ops/kern_avx512_conv.c: the AVX-512 direct conv kernels over a unit-stride
 * run of output pixels (isa_int.h, conv_direct_px and conv_direct_bf16):
 * fp32 with pixels along the zmm lanes and output channels as broadcast
 * weights; bf16 on AMX tiles where the host has them. Compiled for
 * AVX-512 by the pragma below whatever the build flags; reached only through
 * ops_kern_avx512 on a host that has it (ops/isa.c). */
#include "isa_int.h"

#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")
#endif

#define ALWAYS_INLINE static inline __attribute__((always_inline))

#include "kern_avx512_inl.h"

/* Register block: KR output channels x NV 16-pixel vectors of accumulators
 * (8 x 3 = 24 zmm, 3 more for the inputs). Per term: NV loads of inputs and
 * KR broadcast weights (11 loads) feed KR*NV FMAs (24): the two FMA pipes
 * bound the loop, not the two load ports. The weights are KR rows ldw
 * apart (w0..w7 below), one broadcast from each per term. The block's last
 * vector is masked to the run's end, so nothing past x[off[i] + nq - 1] is
 * read. */
#define PX_KR 8
#define PX_NV 3
/* Terms per pass over the run: a block's sums are stored and taken up
 * again every PX_TERMS terms, so that one pass reads 32 channels' rows of
 * a 3x3 patch and their weights, which stay in L1 across the run's blocks
 * (2% faster on the bench's 576-term tiles than one pass over all terms).
 * The sums are the same, in the same order. */
#define PX_TERMS 288

/* The accumulators are named variables, not an array: with an array gcc
 * kept them on the stack, stored back every term. */
#define PX_ROW(r)                                                                       \
	do {                                                                            \
		if (KR > r) {                                                           \
			__m512 b = _mm512_set1_ps(w##r[i]);                             \
			a##r##0 = _mm512_fmadd_ps(x0, b, a##r##0);                      \
			if (NV > 1)                                                     \
				a##r##1 = _mm512_fmadd_ps(x1, b, a##r##1);              \
			if (NV > 2)                                                     \
				a##r##2 = _mm512_fmadd_ps(x2, b, a##r##2);              \
		}                                                                       \
	} while (0)
#define PX_STORE1(r, v, o)                                                              \
	do {                                                                            \
		if (NV - 1 == v)                                                        \
			_mm512_mask_storeu_ps((o) + 16 * v, mlast, a##r##v);            \
		else if (NV > v)                                                        \
			_mm512_storeu_ps((o) + 16 * v, a##r##v);                        \
	} while (0)
#define PX_STORE(r)                                                                     \
	do {                                                                            \
		if (KR > r) {                                                           \
			PX_STORE1(r, 0, out + r * ldo);                                 \
			PX_STORE1(r, 1, out + r * ldo);                                 \
			PX_STORE1(r, 2, out + r * ldo);                                 \
		}                                                                       \
	} while (0)
#define PX_DECL(r) __m512 a##r##0 = z, a##r##1 = z, a##r##2 = z
#define PX_LOAD1(r, v, o)                                                               \
	do {                                                                            \
		if (NV - 1 == v)                                                        \
			a##r##v = _mm512_maskz_loadu_ps(mlast, (o) + 16 * v);           \
		else if (NV > v)                                                        \
			a##r##v = _mm512_loadu_ps((o) + 16 * v);                        \
	} while (0)
#define PX_LOAD(r)                                                                      \
	do {                                                                            \
		if (KR > r) {                                                           \
			PX_LOAD1(r, 0, out + r * ldo);                                  \
			PX_LOAD1(r, 1, out + r * ldo);                                  \
			PX_LOAD1(r, 2, out + r * ldo);                                  \
		}                                                                       \
	} while (0)

ALWAYS_INLINE void px_block(const int KR, const int NV, __mmask16 mlast, const float *x,
			    const int32_t *off, int64_t nterm, const float *w, int64_t ldw,
			    float *out, int64_t ldo, int acc)
{
	/* the weight rows of the block's channels (rows past KR unused) */
	const float *w0 = w, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
	const float *w4 = w3 + ldw, *w5 = w4 + ldw, *w6 = w5 + ldw, *w7 = w6 + ldw;
	const __m512 z = _mm512_setzero_ps();
	PX_DECL(0); PX_DECL(1); PX_DECL(2); PX_DECL(3);
	PX_DECL(4); PX_DECL(5); PX_DECL(6); PX_DECL(7);

	if (acc) {
		PX_LOAD(0); PX_LOAD(1); PX_LOAD(2); PX_LOAD(3);
		PX_LOAD(4); PX_LOAD(5); PX_LOAD(6); PX_LOAD(7);
	}

	for (int64_t i = 0; i < nterm; i++) {
		const float *xp = x + off[i];
		__m512 x0, x1 = z, x2 = z;

		if (NV == 1) {
			x0 = _mm512_maskz_loadu_ps(mlast, xp);
		} else {
			x0 = _mm512_loadu_ps(xp);
			if (NV == 2) {
				x1 = _mm512_maskz_loadu_ps(mlast, xp + 16);
			} else {
				x1 = _mm512_loadu_ps(xp + 16);
				x2 = _mm512_maskz_loadu_ps(mlast, xp + 32);
			}
		}
		PX_ROW(0); PX_ROW(1); PX_ROW(2); PX_ROW(3);
		PX_ROW(4); PX_ROW(5); PX_ROW(6); PX_ROW(7);
	}
	PX_STORE(0); PX_STORE(1); PX_STORE(2); PX_STORE(3);
	PX_STORE(4); PX_STORE(5); PX_STORE(6); PX_STORE(7);
}

/* One block of kr (1..8) channels and nv (1..3) vectors, dispatched to a
 * body compiled for those constants. */
#define PX_CASE(KR)                                                                     \
	case KR:                                                                        \
		if (nv == 3)                                                            \
			px_block(KR, 3, m, x, off, nterm, w, ldw, out, ldo, acc);       \
		else if (nv == 2)                                                       \
			px_block(KR, 2, m, x, off, nterm, w, ldw, out, ldo, acc);       \
		else                                                                    \
			px_block(KR, 1, m, x, off, nterm, w, ldw, out, ldo, acc);       \
		break

static void px_dispatch(int kr, int nv, __mmask16 m, const float *x, const int32_t *off,
			int64_t nterm, const float *w, int64_t ldw, float *out, int64_t ldo,
			int acc)
{
	switch (kr) {
	PX_CASE(8);
	PX_CASE(7);
	PX_CASE(6);
	PX_CASE(5);
	PX_CASE(4);
	PX_CASE(3);
	PX_CASE(2);
	PX_CASE(1);
	default:
		break;
	}
}

void ops_avx512_conv_direct_px(const float *x, const int32_t *off, int64_t nterm,
			       const float *wp, int64_t ldw, int nk, int64_t nq, float *out,
			       int64_t ldo)
{
	for (int64_t t0 = 0; t0 < nterm; t0 += PX_TERMS) {
		int64_t nt = nterm - t0 < PX_TERMS ? nterm - t0 : PX_TERMS;

		for (int64_t q0 = 0; q0 < nq; q0 += 16 * PX_NV) {
			int64_t left = nq - q0;
			int nv = left >= 16 * PX_NV ? PX_NV : (int)((left + 15) / 16);
			int64_t tail = left - 16 * (nv - 1);
			__mmask16 m = tail >= 16 ? (__mmask16)0xffff :
						   (__mmask16)((1u << tail) - 1u);

			for (int k0 = 0; k0 < nk; k0 += PX_KR) {
				int kr = nk - k0 < PX_KR ? nk - k0 : PX_KR;

				px_dispatch(kr, nv, m, x + q0, off + t0, nt, wp + k0 * ldw + t0,
					    ldw, out + k0 * ldo + q0, ldo, t0 > 0);
			}
		}
	}
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

/* ---- bf16 on AMX tiles -------------------------------------------------------------
 * vdpbf16ps would be the AVX512_BF16 way, but on this generation of cores
 * it issues one zmm every two cycles: 16 MACs a cycle, half of what two
 * fp32 FMA pipes give on widened data. The AMX unit's tdpbf16ps does 16 x
 * 16 x 32 MACs per instruction. Tiles: C0..C3 the fp32 sums (nk channels x
 * 16 pixels each), A the weights (nk x 32 terms), B the inputs (16 term
 * pairs x 16 pixels, pairs interleaved as tdpbf16ps reads them). */

/* ARCH_REQ_XCOMP_PERM / XFEATURE_XTILEDATA of <asm/prctl.h>: Linux hands a
 * process the tile data state only when it asks for it. */
#define AMX_REQ_XCOMP_PERM 0x1023
#define AMX_XTILEDATA 18

struct amx_cfg {
	uint8_t palette, start_row;
	uint8_t reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

static int amx_state; /* 0 unknown, 1 usable, -1 not */
/* AVX512_BF16 beside AMX: vcvtneps2bf16 rounds the sums on their way out
 * (cl_put); without it the integer rounding does */
static int amx_cvtne;

static void amx_probe(void)
{
	unsigned a, b, c, d;
	int ok = 0;

	/* CPUID.(7,0):EDX bit 24 AMX-TILE, bit 22 AMX-BF16; CPUID.(7,1):EAX
	 * bit 5 AVX512_BF16 */
	if (__get_cpuid_max(0, NULL) >= 7) {
		__cpuid_count(7, 0, a, b, c, d);
		ok = (d >> 24 & 1) && (d >> 22 & 1);
		__cpuid_count(7, 1, a, b, c, d);
		amx_cvtne = a >> 5 & 1;
	}
#if defined(__linux__) && defined(SYS_arch_prctl)
	if (ok)
		ok = syscall(SYS_arch_prctl, AMX_REQ_XCOMP_PERM, AMX_XTILEDATA) == 0;
#else
	ok = 0;
#endif
	amx_state = ok ? 1 : -1;
}

int ops_amx_bf16_ready(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, amx_probe);
	return amx_state > 0;
}

/* B tiles of one 32-term step for nh halves of 32 pixels: row r of tile 2h
 * takes pixels {0-3, 8-11, 16-19, 24-27} of half h, tile 2h+1 the others
 * (vpunpck{l,h}wd interleave within 128-bit lanes); each pixel's lane pair
 * is (term 2r, term 2r+1). Pixels at or past nq are loaded as 0 (masked). */
#define AMX_TARGET __attribute__((target("avx512bf16,avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,amx-tile,amx-bf16")))

AMX_TARGET ALWAYS_INLINE void amx_pack(uint16_t *buf, const uint16_t *x, const int32_t *off,
			    int64_t t0, int64_t nterm, int nh, __mmask32 m0, __mmask32 m1)
{
	const __m512i z = _mm512_setzero_si512();

	for (int r = 0; r < 16; r++) {
		int64_t ta = t0 + 2 * r, tb = ta + 1;

		for (int h = 0; h < nh; h++) {
			__mmask32 m = h ? m1 : m0;
			__m512i va = ta < nterm ? _mm512_maskz_loadu_epi16(m, x + off[ta] + 32 * h) : z;
			__m512i vb = tb < nterm ? _mm512_maskz_loadu_epi16(m, x + off[tb] + 32 * h) : z;

			_mm512_store_si512((__m512i *)(buf + (2 * h) * 512 + 32 * r),
					   _mm512_unpacklo_epi16(va, vb));
			_mm512_store_si512((__m512i *)(buf + (2 * h + 1) * 512 + 32 * r),
					   _mm512_unpackhi_epi16(va, vb));
		}
	}
}

AMX_TARGET void ops_avx512_conv_direct_bf16(const uint16_t *x, const int32_t *off, int64_t nterm,
				 const uint16_t *a, int64_t lda, int nk, int64_t nq, float *out,
				 int64_t ldo)
{
	struct amx_cfg cfg;
	uint16_t buf[2][4 * 512] __attribute__((aligned(64)));
	float cb[4][16 * 16] __attribute__((aligned(64)));
	/* natural pixel order from the lo/hi tiles of one half */
	const __m512i ix0 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
	const __m512i ix1 = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29,
					      30, 31);
	int64_t nks = (nterm + 31) / 32;

	memset(&cfg, 0, sizeof cfg);
	cfg.palette = 1;
	for (int t = 0; t < 8; t++) {
		cfg.colsb[t] = 64;
		cfg.rows[t] = (uint8_t)(t <= 4 ? nk : 16); /* C0-3 and A: nk rows */
	}
	_tile_loadconfig(&cfg);
	for (int64_t q0 = 0; q0 < nq; q0 += 64) {
		int64_t left = nq - q0;
		int nh = left > 32 ? 2 : 1;
		__mmask32 m0 = left >= 32 ? (__mmask32)~0u : (__mmask32)((1u << left) - 1u);
		__mmask32 m1 = left >= 64 ? (__mmask32)~0u :
			       left > 32 ? (__mmask32)((1u << (left - 32)) - 1u) : 0;

		_tile_zero(0);
		_tile_zero(1);
		_tile_zero(2);
		_tile_zero(3);
		/* the next step's B is packed before this step's tiles load
		 * theirs: a tile load right behind the stores that wrote its
		 * rows waited for them (no store forwarding into tiles) */
		amx_pack(buf[0], x + q0, off, 0, nterm, nh, m0, m1);
		for (int64_t ks = 0; ks < nks; ks++) {
			const uint16_t *bk = buf[ks & 1];

			if (ks + 1 < nks)
				amx_pack(buf[(ks + 1) & 1], x + q0, off, 32 * (ks + 1), nterm, nh,
					 m0, m1);
			_tile_loadd(4, a + 32 * ks, lda * 2);
			_tile_loadd(5, bk, 64);
			_tile_dpbf16ps(0, 4, 5);
			_tile_loadd(6, bk + 512, 64);
			_tile_dpbf16ps(1, 4, 6);
			if (nh > 1) {
				_tile_loadd(7, bk + 1024, 64);
				_tile_dpbf16ps(2, 4, 7);
				_tile_loadd(5, bk + 1536, 64);
				_tile_dpbf16ps(3, 4, 5);
			}
		}
		_tile_stored(0, cb[0], 64);
		_tile_stored(1, cb[1], 64);
		if (nh > 1) {
			_tile_stored(2, cb[2], 64);
			_tile_stored(3, cb[3], 64);
		}
		for (int k = 0; k < nk; k++)
			for (int h = 0; h < nh; h++) {
				__m512 lo = _mm512_load_ps(cb[2 * h] + 16 * k);
				__m512 hi = _mm512_load_ps(cb[2 * h + 1] + 16 * k);
				__mmask32 m = h ? m1 : m0;
				float *o = out + k * ldo + q0 + 32 * h;

				_mm512_mask_storeu_ps(o, (__mmask16)m, _mm512_permutex2var_ps(lo, ix0, hi));
				_mm512_mask_storeu_ps(o + 16, (__mmask16)(m >> 16),
						      _mm512_permutex2var_ps(lo, ix1, hi));
			}
	}
	_tile_release();
}

/* Every tile register 16 rows of 64 bytes. */
AMX_TARGET ALWAYS_INLINE void amx_config_full(void)
{
	struct amx_cfg cfg;

	memset(&cfg, 0, sizeof cfg);
	cfg.palette = 1;
	for (int t = 0; t < 8; t++) {
		cfg.colsb[t] = 64;
		cfg.rows[t] = 16;
	}
	_tile_loadconfig(&cfg);
}

/* ---- bf16 on AMX tiles, channel pairs ---------------------------------------------
 * The patch once re-laid as channel pairs (xp[(pair * plane + p) * 2 + j] =
 * channel 2 * pair + j at patch position p), a tdpbf16ps B tile of 16 pairs
 * x 16 pixels is one tile load at any filter tap's offset: the r*s taps of
 * a 3x3 filter read the same packed patch, where conv_direct_bf16 packs
 * every term again. A: the weights of one 32-channel block and tap, 16
 * output channels x 16 pairs (zero past nk and past the channels).
 * C0..C3: the fp32 sums of 4 groups of 16 pixels, stored in pixel order. */
AMX_TARGET void ops_avx512_conv_bf16_pairs(const uint16_t *xp, int64_t plane, int ncb,
				const int32_t *toff, int ntap, const uint16_t *a, int nk,
				int64_t nq, float *out, int64_t ldo)
{
	float cb[16 * 16] __attribute__((aligned(64)));
	const int64_t bstride = plane * 4; /* bytes between the pairs of a B tile */

	amx_config_full();
	for (int64_t q0 = 0; q0 < nq; q0 += 64) {
		int ng = nq - q0 >= 64 ? 4 : (int)((nq - q0 + 15) / 16);

		_tile_zero(0);
		_tile_zero(1);
		_tile_zero(2);
		_tile_zero(3);
		/* the steps (channel block, tap) in pairs: A alternates between
		 * tmm4 and tmm5 and B between tmm6 and tmm7, so that a tile load
		 * never waits for the tdpbf16ps still reading the previous tile
		 * of the same register */
		int64_t nstep = (int64_t)ncb * ntap;

		/* step ST with its A in tile TA: the B tiles of its ng channel
		 * groups, 32 pixels apart, into tmm6/tmm7 in turn */
#define PAIRS_STEP(TA, ST)                                                              \
	do {                                                                            \
		const uint16_t *b_ = xp + (((ST) / ntap) * 16 * plane + q0 +            \
					   toff[(ST) % ntap]) * 2;                        \
		_tile_loadd(TA, a + (ST) * 512, 64);                                    \
		_tile_loadd(6, b_, bstride);                                            \
		_tile_dpbf16ps(0, TA, 6);                                               \
		if (ng > 1) {                                                           \
			_tile_loadd(7, b_ + 32, bstride);                               \
			_tile_dpbf16ps(1, TA, 7);                                       \
		}                                                                       \
		if (ng > 2) {                                                           \
			_tile_loadd(6, b_ + 64, bstride);                               \
			_tile_dpbf16ps(2, TA, 6);                                       \
		}                                                                       \
		if (ng > 3) {                                                           \
			_tile_loadd(7, b_ + 96, bstride);                               \
			_tile_dpbf16ps(3, TA, 7);                                       \
		}                                                                       \
	} while (0)
		for (int64_t st = 0; st < nstep; st += 2) {
			PAIRS_STEP(4, st);
			if (st + 1 < nstep)
				PAIRS_STEP(5, st + 1);
		}
#undef PAIRS_STEP
		/* whole groups of all 16 channels straight to out, the rest
		 * through cb */
#define PAIRS_STORE(g)                                                                  \
		do {                                                                    \
			if (ng > g) {                                                   \
				int64_t qg = q0 + 16 * g, nv = nq - qg < 16 ? nq - qg : 16; \
				if (nk == 16 && nv == 16) {                             \
					_tile_stored(g, out + qg, ldo * 4);             \
				} else {                                                \
					_tile_stored(g, cb, 64);                        \
					__mmask16 m = (__mmask16)((1u << nv) - 1u);     \
					for (int k = 0; k < nk; k++)                    \
						_mm512_mask_storeu_ps(out + k * ldo + qg, m, \
								      _mm512_load_ps(cb + 16 * k)); \
				}                                                       \
			}                                                               \
		} while (0)
		PAIRS_STORE(0);
		PAIRS_STORE(1);
		PAIRS_STORE(2);
		PAIRS_STORE(3);
#undef PAIRS_STORE
	}
	_tile_release();
}

/* vpermt2w's indices interleaving two channels' rows into channel pairs:
 * word i of the result is a[i / 2] for even i, b[i / 2] for odd i, from
 * the low (lo) or the high (hi) 16 positions of a and b. */
__attribute__((target("avx512f,avx512bw"))) ALWAYS_INLINE void pair_idx(__m512i *lo, __m512i *hi)
{
	*lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7,
			       38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
	*hi = _mm512_set_epi16(63, 31, 62, 30, 61, 29, 60, 28, 59, 27, 58, 26, 57, 25, 56, 24, 55, 23,
			       54, 22, 53, 21, 52, 20, 51, 19, 50, 18, 49, 17, 48, 16);
}

/* Channels [0, nc) of a bf16 patch x[c * plane_in + p] (p < np) as the
 * channel pairs of ops_avx512_conv_bf16_pairs, xp[(pair * plane + p) * 2 +
 * j], channels nc .. npair*2 - 1 zero. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
void ops_avx512_conv_bf16_pack_pairs(const uint16_t *x, int64_t plane_in, int64_t nc,
				     int64_t np, uint16_t *xp, int64_t plane, int64_t npair)
{
	const __m512i z = _mm512_setzero_si512();
	__m512i lo, hi;

	pair_idx(&lo, &hi);

	for (int64_t pr = 0; pr < npair; pr++) {
		const uint16_t *xa = x + 2 * pr * plane_in, *xb = xa + plane_in;
		uint16_t *d = xp + pr * plane * 2;
		int ha = 2 * pr < nc, hb = 2 * pr + 1 < nc;

		for (int64_t p = 0; p < np; p += 32) {
			__mmask32 m = np - p >= 32 ? (__mmask32)~0u :
				      (__mmask32)((1u << (np - p)) - 1u);
			__m512i va = ha ? _mm512_maskz_loadu_epi16(m, xa + p) : z;
			__m512i vb = hb ? _mm512_maskz_loadu_epi16(m, xb + p) : z;
			__mmask32 m0 = np - p >= 16 ? (__mmask32)~0u :
				       (__mmask32)((1u << (2 * (np - p))) - 1u);
			__mmask32 m1 = np - p >= 32 ? (__mmask32)~0u :
				       np - p > 16 ? (__mmask32)((1u << (2 * (np - p - 16))) - 1u) : 0;

			_mm512_mask_storeu_epi16(d + 2 * p, m0, _mm512_permutex2var_epi16(va, lo, vb));
			if (m1)
				_mm512_mask_storeu_epi16(d + 2 * p + 32, m1,
							 _mm512_permutex2var_epi16(va, hi, vb));
		}
	}
}

/* ---- bf16 on AMX tiles, channel-last blocks -------------------------------------
 * The input as 32-channel blocks of whole pixels (64 bytes each): an A tile
 * of m pixels x 32 channels is m consecutive 64-byte rows at any filter
 * tap's offset, always aligned, one copy for every tap; B is the weights of
 * one block and tap, 16 channel pairs x 16 output channels, reused by the m
 * pixels of every C tile it feeds. C[m][16] comes out pixel by output
 * channel and is transposed on its way to out. A job's outputs are cut
 * into pieces of m <= 16 pixels, along each row or over the rows' ends
 * (cl_geom_of); four pieces share each step's B tile, or with 32 output
 * channels two pieces share two (cl_group). */

/* Steps (channel block, tap) of one call at most: ops_kern's contract
 * (isa_int.h). */
#define CL_MAX_STEPS OPS_CL_MAX_STEPS

/* A piece whose sums wait in cbuf to go out: where (out's or y's first
 * output, the other 0) and for how many output channels; lanes m of the
 * piece's outputs go there in order. A piece running over a row's end
 * holds the next row's first outputs in its lanes from n1 + shift on,
 * after shift lanes of sums between the rows; its outputs are one run in
 * memory (rows of out and y ncol apart), its lanes from n1 on moved down
 * by shift before the store. */
struct cl_out {
	uintptr_t out, y;
	int nk, n1, shift;
	__mmask16 m;
};

/* Lane l of a piece's stored run comes from lane l, or l + shift past n1. */
AMX_TARGET ALWAYS_INLINE __m512i cl_shift_idx(const struct cl_out *o)
{
	const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);

	return _mm512_mask_add_epi32(iota, (__mmask16)(0xFFFFu << o->n1), iota,
				     _mm512_set1_epi32(o->shift));
}

/* c[i*16 + k] (i < m) to o->out[k*ldo + i] for k < o->nk (lanes o->m, past
 * the shift), or with o->y, rounded to bf16 as the scalar conversion does,
 * to o->y[k*ldy + i]. */
AMX_TARGET ALWAYS_INLINE void cl_put(const float *c, int m, const struct cl_out *o, int64_t ldo,
				     int64_t ldy, int cvtne)
{
	__m512 rows[16], r[16];

	_Pragma("GCC unroll 16")
	for (int i = 0; i < 16; i++)
		rows[i] = i < m ? _mm512_load_ps(c + 16 * i) : _mm512_setzero_ps();
	tr16_regs(rows, r);
	if (o->y) {
		/* vcvtneps2bf16 rounds as the scalar conversion does but for
		 * subnormal inputs, which it flushes to zero; tdpbf16ps
		 * already flushes its subnormal sums, so every sum here is
		 * normal or zero and the two agree bit for bit (12 us of the
		 * bench's 148 us launch against the integer rounding) */
		const uintptr_t ry = (uintptr_t)ldy * sizeof(uint16_t);

		if (o->shift) {
			const __m256i ix = _mm512_cvtepi32_epi16(cl_shift_idx(o));

			_Pragma("GCC unroll 16")
			for (int k = 0; k < o->nk; k++)
				_mm256_mask_storeu_epi16((void *)(o->y + k * ry), o->m,
							 _mm256_permutexvar_epi16(ix, cvtne ?
							 (__m256i)_mm512_cvtneps_pbh(r[k]) :
							 bf16_pack16(r[k])));
			return;
		}
		_Pragma("GCC unroll 16")
		for (int k = 0; k < o->nk; k++)
			_mm256_mask_storeu_epi16((void *)(o->y + k * ry), o->m,
						 cvtne ? (__m256i)_mm512_cvtneps_pbh(r[k]) :
							 bf16_pack16(r[k]));
		return;
	}
	const uintptr_t ro = (uintptr_t)ldo * sizeof(float);

	if (o->shift) {
		const __m512i ix = cl_shift_idx(o);

		_Pragma("GCC unroll 16")
		for (int k = 0; k < o->nk; k++)
			r[k] = _mm512_permutexvar_ps(ix, r[k]);
	}
	_Pragma("GCC unroll 16")
	for (int k = 0; k < o->nk; k++)
		_mm512_mask_storeu_ps((void *)(o->out + k * ro), o->m, r[k]);
}

/* How a job is cut into pieces of m <= 16 outputs, each one A tile:
 * along each row, ceil(ncol / 16) pieces a row of m = ncol / that,
 * rounded up, the last one ending at the row's end (np a row); or, at unit
 * column stride (cs 1) where it takes fewer pieces, 16 outputs at a time
 * along the job's rows laid end to end at the input's row pitch (flat):
 * positions r*rp + c for c < rp, the last piece ending at the last row's
 * end, where the rows' outputs are adjacent in memory (a piece over a
 * row's end then goes out as one run, cl_put). The positions past a row's
 * ncol outputs, up to the next row, are inputs between the rows (the
 * band's halo columns) whose sums are dropped. A tdpbf16ps of 16 rows
 * takes about what one of 14 does (5.2 against 5.0 ns on random data,
 * this kernel's loads), so the 4 x 14 pieces of a 56-output row become
 * 3.6 of 16: 9.4% fewer tile instructions on the bench's 3x3 conv, its
 * launch 126 -> 122 us; with a second masked store a channel for a piece
 * over a row's end instead of the one run it took 130. */
struct cl_geom {
	int flat, m;
	int64_t np, npiece, span; /* span: flat positions of the job */
};

AMX_TARGET ALWAYS_INLINE void cl_geom_of(const struct ops_cl_job *jb, int64_t rp, int64_t cs,
					 int64_t ldyr, struct cl_geom *g)
{
	g->np = (jb->ncol + 15) / 16;
	g->m = (int)((jb->ncol + g->np - 1) / g->np);
	g->npiece = jb->nr * g->np;
	g->flat = 0;
	if (cs != 1 || jb->ncol < 16 || jb->nr < 2 || rp < jb->ncol || rp - jb->ncol >= 16 ||
	    (jb->y && ldyr != jb->ncol))
		return;
	int64_t span = (jb->nr - 1) * rp + jb->ncol, nflat = (span + 15) / 16;

	if (nflat >= g->npiece)
		return;
	g->flat = 1;
	g->m = 16;
	g->npiece = nflat;
	g->span = span;
}

/* Piece i of a job: its input offset (*pos, in elements) and where its
 * lanes go for output channels 0..15 of the job (o, nk set by the caller).
 * A flat piece holds at most the end of one row and the start of the next
 * (ncol >= 16 outputs a row, fewer than 16 positions between), one run of
 * outputs in memory (rows ncol apart: cl_geom_of). */
AMX_TARGET ALWAYS_INLINE void cl_piece(const struct ops_cl_job *jb, const struct cl_geom *g,
				       int64_t i, int64_t rp, int64_t cs, int64_t ldyr,
				       int64_t *pos, struct cl_out *o)
{
	int64_t r, c0;

	o->n1 = 16;
	o->shift = 0;
	if (!g->flat) {
		int64_t p = i % g->np;

		r = i / g->np;
		c0 = p == g->np - 1 ? jb->ncol - g->m : p * g->m;
		*pos = (r * rp + c0 * cs) * 32;
		o->m = (__mmask16)((1u << g->m) - 1u);
	} else {
		int64_t f = 16 * i < g->span - 16 ? 16 * i : g->span - 16;

		r = f / rp;
		c0 = f - r * rp;
		*pos = f * 32;
		/* lanes [0, n1) row r's outputs from c0, lanes [j, 16) the next
		 * row's from its first */
		int n1 = c0 < jb->ncol ? (int)(jb->ncol - c0 < 16 ? jb->ncol - c0 : 16) : 0;
		int j = rp - c0 < 16 ? (int)(rp - c0) : 16;

		o->m = (__mmask16)((1u << (n1 + 16 - j)) - 1u);
		if (j < 16) {
			o->n1 = n1;
			o->shift = j - n1;
		}
		if (!n1) { /* the piece starts between the rows */
			r++;
			c0 = 0;
		}
	}
	o->out = jb->y ? 0 : (uintptr_t)(jb->out + r * jb->ncol + c0);
	o->y = jb->y ? (uintptr_t)(jb->y + r * ldyr + c0) : 0;
}

/* The same piece's lanes for output channels 16.. (nk of them). */
AMX_TARGET ALWAYS_INLINE struct cl_out cl_out_upper(const struct cl_out *o, int nk, int64_t ldo,
						    int64_t ldyk)
{
	struct cl_out u = *o;

	u.nk = nk;
	if (u.y)
		u.y += (uintptr_t)(16 * ldyk) * sizeof(uint16_t);
	else
		u.out += (uintptr_t)(16 * ldo) * sizeof(float);
	return u;
}

/* A group's C tiles: which tile holds what, one group late (cl_put).
 * With one weight vector (nk <= 16) the group is four pieces, tile g
 * piece g; with two, two pieces x two vectors: tile 2*i + h is piece i's
 * channels 16*h on (oneDNN's 2 x 2 blocking: 4 tile loads to 4 tdpbf16ps,
 * against 5 with four pieces on one B). */
struct cl_group {
	struct cl_out o[4];
	int m;
};

AMX_TARGET ALWAYS_INLINE void cl_put_one(const float *c, const struct cl_group *gp, int t,
					 int64_t ldo, int64_t ldy, int cvtne)
{
	if (gp->o[t].nk)
		cl_put(c, gp->m, &gp->o[t], ldo, ldy, cvtne);
}

/* ops_avx512_conv_bf16_cl, one copy for each way of rounding (cvtne a
 * constant): a test of the flag at each tile's way out made gcc's code for
 * the loop around it 15% slower */
AMX_TARGET ALWAYS_INLINE void cl_kernel(const struct ops_cl_job *jobs, int njob, int64_t cbs,
					int ncb, const int32_t *toff, int ntap, int64_t rp,
					int64_t cs, int64_t ldo, int64_t ldyk, int64_t ldyr,
					int cvtne)
{
	struct amx_cfg cfg;
	/* two groups' C tiles: the previous group's are transposed out while
	 * this group's tdpbf16ps run (loading a tile's rows right after
	 * _tile_stored wrote them waited for the store, twice the kernel's
	 * time when done in line), across jobs too: a group's tail no longer
	 * waits for the tile unit to drain at each job's end */
	float cbuf[2][4][16 * 16] __attribute__((aligned(64)));
	struct cl_group pend[2];
	int64_t pos[4], nstep = (int64_t)ncb * ntap, gi = 0;
	const int64_t astride = cs * 64;
	int cfg_m = 0, waiting = 0; /* the previous group's tiles wait in cbuf */
	/* each step's input offset: (channel block, tap) without a division a step */
	int64_t xo[CL_MAX_STEPS];

	for (int64_t st = 0, cb = 0, t = 0; st < nstep; st++) {
		xo[st] = (cb * cbs + toff[t]) * 32;
		if (++t == ntap) {
			t = 0;
			cb++;
		}
	}
	memset(&cfg, 0, sizeof cfg);
	cfg.palette = 1;
	for (int j = 0; j < njob; j++) {
		const struct ops_cl_job *jb = &jobs[j];
		const uint16_t *xn = jb->xn, *b = jb->b, *b2 = jb->b2;
		const int two = jb->nk > 16, per = two ? 2 : 4;
		struct cl_geom geo;

		cl_geom_of(jb, rp, cs, ldyr, &geo);
		const int m = geo.m;
		const int64_t npiece = geo.npiece;

		if (m != cfg_m) {
			/* a new width: what waits goes out at the old one first */
			for (int t = 0; waiting && t < 4; t++)
				cl_put_one(cbuf[gi ^ 1][t], &pend[gi ^ 1], t, ldo, ldyk, cvtne);
			waiting = 0;
			/* C in 0-3 and A in 4-5 m rows each, B in 6-7 16 pairs */
			for (int t = 0; t < 8; t++) {
				cfg.colsb[t] = 64;
				cfg.rows[t] = (uint8_t)(t >= 6 ? 16 : m);
			}
			_tile_loadconfig(&cfg);
			cfg_m = m;
		}
		for (int64_t g0 = 0; g0 < npiece; g0 += per, gi ^= 1) {
			int ng = npiece - g0 >= per ? per : (int)(npiece - g0);
			struct cl_group *gp = &pend[gi];

			gp->m = m;
			for (int t = 0; t < 4; t++)
				gp->o[t].nk = 0;
			for (int g = 0; g < ng; g++) {
				struct cl_out o;

				cl_piece(jb, &geo, g0 + g, rp, cs, ldyr, &pos[g], &o);
				if (!two) {
					o.nk = jb->nk;
					gp->o[g] = o;
					continue;
				}
				o.nk = 16;
				gp->o[2 * g] = o;
				gp->o[2 * g + 1] = cl_out_upper(&o, jb->nk - 16, ldo, ldyk);
			}
			_tile_zero(0);
			_tile_zero(1);
			_tile_zero(2);
			_tile_zero(3);
			/* one vector: step ST with its B in tile TB, A alternating
			 * tmm4 / tmm5 over the four pieces */
#define CL_STEP(TB, ST)                                                                 \
	do {                                                                            \
		const uint16_t *x_ = xn + xo[ST];                                       \
		_tile_loadd(TB, b + (ST) * 512, 64);                                    \
		_tile_loadd(4, x_ + pos[0], astride);                                   \
		_tile_dpbf16ps(0, 4, TB);                                               \
		if (ng > 1) {                                                           \
			_tile_loadd(5, x_ + pos[1], astride);                           \
			_tile_dpbf16ps(1, 5, TB);                                       \
		}                                                                       \
		if (ng > 2) {                                                           \
			_tile_loadd(4, x_ + pos[2], astride);                           \
			_tile_dpbf16ps(2, 4, TB);                                       \
		}                                                                       \
		if (ng > 3) {                                                           \
			_tile_loadd(5, x_ + pos[3], astride);                           \
			_tile_dpbf16ps(3, 5, TB);                                       \
		}                                                                       \
	} while (0)
			/* two vectors: A of the pieces in tmm4 / tmm5, B of the
			 * vectors in tmm6 / tmm7, B loaded with the streaming hint
			 * (tileloaddt1, as oneDNN's kernel loads its weights): a
			 * group's 36 KiB of B then leave the pieces' input rows in
			 * L1; 3.5-4% faster in three batches of 8-12 paired runs
			 * (11 of 12 faster in the last), while the hint on A too was
			 * 5% slower, and on the one-vector path no faster */
#define C2_STEP(ST)                                                                     \
	do {                                                                            \
		const uint16_t *x_ = xn + xo[ST];                                       \
		_tile_loadd(4, x_ + pos[0], astride);                                   \
		_tile_stream_loadd(6, b + (ST) * 512, 64);                              \
		_tile_stream_loadd(7, b2 + (ST) * 512, 64);                             \
		_tile_dpbf16ps(0, 4, 6);                                                \
		if (ng > 1)                                                             \
			_tile_loadd(5, x_ + pos[1], astride);                           \
		_tile_dpbf16ps(1, 4, 7);                                                \
		if (ng > 1) {                                                           \
			_tile_dpbf16ps(2, 5, 6);                                        \
			_tile_dpbf16ps(3, 5, 7);                                        \
		}                                                                       \
	} while (0)
			/* the previous group's tiles go out one every other step
			 * pair, between this group's tile instructions */
			int done = 0;

			for (int64_t st = 0; st < nstep; st += 2) {
				if (two) {
					C2_STEP(st);
					if (st + 1 < nstep)
						C2_STEP(st + 1);
				} else {
					CL_STEP(6, st);
					if (st + 1 < nstep)
						CL_STEP(7, st + 1);
				}
				if ((st & 2) && waiting && done < 4) {
					cl_put_one(cbuf[gi ^ 1][done], &pend[gi ^ 1], done, ldo, ldyk, cvtne);
					done++;
				}
			}
#undef CL_STEP
#undef C2_STEP
			for (; waiting && done < 4; done++)
				cl_put_one(cbuf[gi ^ 1][done], &pend[gi ^ 1], done, ldo, ldyk, cvtne);
			if (gp->o[0].nk)
				_tile_stored(0, cbuf[gi][0], 64);
			if (gp->o[1].nk)
				_tile_stored(1, cbuf[gi][1], 64);
			if (gp->o[2].nk)
				_tile_stored(2, cbuf[gi][2], 64);
			if (gp->o[3].nk)
				_tile_stored(3, cbuf[gi][3], 64);
			waiting = 1;
		}
	}
	if (cfg_m)
		_tile_release();
	for (int t = 0; waiting && t < 4; t++)
		cl_put_one(cbuf[gi ^ 1][t], &pend[gi ^ 1], t, ldo, ldyk, cvtne);
}

AMX_TARGET void ops_avx512_conv_bf16_cl(const struct ops_cl_job *jobs, int njob, int64_t cbs,
					int ncb, const int32_t *toff, int ntap, int64_t rp,
					int64_t cs, int64_t ldo, int64_t ldyk, int64_t ldyr)
{
	if (amx_cvtne)
		cl_kernel(jobs, njob, cbs, ncb, toff, ntap, rp, cs, ldo, ldyk, ldyr, 1);
	else
		cl_kernel(jobs, njob, cbs, ncb, toff, ntap, rp, cs, ldo, ldyk, ldyr, 0);
}

/* Any band row (ops_avx512_conv_bf16_cl_row's contract), 32 positions at
 * a time: vpunpck{l,h}wd interleave two channels' rows into channel pairs
 * (32-bit lanes), positions {0-3, 8-11, 16-19, 24-27} in the low half's
 * lanes and the others in the high half's, and a 16 x 16 transpose of
 * each half gives those positions' 32 channels (5 shuffles a position
 * against the 7 of vpermt2w on 16 positions). */
AMX_TARGET static void cl_row_any(const uint16_t *src, int64_t lds, int nc, int64_t lo, int64_t hi,
				   int64_t n, uint16_t *dst)
{
	for (int64_t p0 = 0; p0 < n; p0 += 32) {
		int np = n - p0 >= 32 ? 32 : (int)(n - p0);
		int64_t a = lo > p0 ? lo : p0, e = hi < p0 + np ? hi : p0 + np;
		__m512 r[16], px[16];

		if (a >= e) {
			for (int i = 0; i < np; i++)
				_mm512_storeu_si512((void *)(dst + (p0 + i) * 32), _mm512_setzero_si512());
			continue;
		}
		/* the valid elements [a, e) land in lanes a - p0 on: a masked
		 * load from s lanes before them (the masked-off lanes are not
		 * read), its address formed as an integer */
		int s = (int)(a - p0);
		__mmask32 m = (__mmask32)(((1ull << (e - a)) - 1u) << s);
		uintptr_t sp = (uintptr_t)(src + (a - lo)) - (uintptr_t)s * sizeof *src;

		for (int half = 0; half < 2; half++) {
			_Pragma("GCC unroll 16")
			for (int pr = 0; pr < 16; pr++) {
				uintptr_t ra = sp + (uintptr_t)(2 * pr * lds) * sizeof *src;
				uintptr_t rb = ra + (uintptr_t)lds * sizeof *src;
				__m512i x0 = 2 * pr < nc ? _mm512_maskz_loadu_epi16(m, (const void *)ra) :
					     _mm512_setzero_si512();
				__m512i x1 = 2 * pr + 1 < nc ?
					     _mm512_maskz_loadu_epi16(m, (const void *)rb) :
					     _mm512_setzero_si512();
				r[pr] = _mm512_castsi512_ps(half ? _mm512_unpackhi_epi16(x0, x1) :
							    _mm512_unpacklo_epi16(x0, x1));
			}
			tr16_regs(r, px);
			/* px[i]: position 8 * (i / 4) + 4 * half + i % 4 */
			_Pragma("GCC unroll 16")
			for (int i = 0; i < 16; i++) {
				int q = 8 * (i / 4) + 4 * half + i % 4;

				if (q < np)
					_mm512_storeu_si512((void *)(dst + (p0 + q) * 32),
							    _mm512_castps_si512(px[i]));
			}
		}
	}
}

/* Positions [0, 8) of a row with all 32 channels valid (src at position
 * 0): lane l of r[k] is channel 8l + k's 8 positions, loaded 16 bytes a
 * lane (vinserti32x4 from memory, off the shuffle port), and an 8 x 8
 * transpose in every lane makes v[j] position j's 32 channels: 3 shuffles
 * a position. */
AMX_TARGET ALWAYS_INLINE void cl_row_octet(const uint16_t *src, int64_t lds, uint16_t *dst)
{
	__m512i r[8], t[8], u[8];

	_Pragma("GCC unroll 8")
	for (int k = 0; k < 8; k++) {
		__m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(src + k * lds)));

		v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(src + (8 + k) * lds)), 1);
		v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(src + (16 + k) * lds)), 2);
		r[k] = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(src + (24 + k) * lds)), 3);
	}
	_Pragma("GCC unroll 4")
	for (int k = 0; k < 8; k += 2) {
		t[k] = _mm512_unpacklo_epi16(r[k], r[k + 1]);
		t[k + 1] = _mm512_unpackhi_epi16(r[k], r[k + 1]);
	}
	_Pragma("GCC unroll 2")
	for (int k = 0; k < 8; k += 4) {
		u[k] = _mm512_unpacklo_epi32(t[k], t[k + 2]);
		u[k + 1] = _mm512_unpackhi_epi32(t[k], t[k + 2]);
		u[k + 2] = _mm512_unpacklo_epi32(t[k + 1], t[k + 3]);
		u[k + 3] = _mm512_unpackhi_epi32(t[k + 1], t[k + 3]);
	}
	_Pragma("GCC unroll 4")
	for (int j = 0; j < 4; j++) {
		_mm512_storeu_si512((void *)(dst + (2 * j) * 32), _mm512_unpacklo_epi64(u[j], u[j + 4]));
		_mm512_storeu_si512((void *)(dst + (2 * j + 1) * 32),
				    _mm512_unpackhi_epi64(u[j], u[j + 4]));
	}
}

/* One band row of ops_avx512_conv_bf16_cl's input from the image's
 * channel rows: dst[p*32 + c] = src[c*lds + p - lo] for c < nc and lo <= p
 * < hi, else 0, for p < n (src points at position lo). With all 32
 * channels, the valid run 8 positions at a time (cl_row_octet), its tail
 * and the zeros around it as any row. */
AMX_TARGET void ops_avx512_conv_bf16_cl_row(const uint16_t *src, int64_t lds, int nc, int64_t lo,
					    int64_t hi, int64_t n, uint16_t *dst)
{
	/* the valid positions written, [a, e) */
	int64_t a = lo < n ? lo : n, e = hi < n ? hi : n, p = a;

	if (nc < 32 || e - a < 8) {
		cl_row_any(src, lds, nc, lo, hi, n, dst);
		return;
	}
	memset(dst, 0, (size_t)a * 32 * sizeof *dst);
	for (; p + 8 <= e; p += 8)
		cl_row_octet(src + (p - lo), lds, dst + p * 32);
	if (p < e)
		cl_row_any(src + (p - lo), lds, nc, 0, e - p, e - p, dst + p * 32);
	memset(dst + e * 32, 0, (size_t)(n - e) * 32 * sizeof *dst);
}

/* ---- bf16 on AMX tiles, a 1x1 convolution as one GEMM ------------------------------
 * The transposed product of the channel-last kernel: A the weights (16
 * output channels x 32 channels a tile), B the input as channel pairs (16
 * pairs x 16 positions a tile), C 16 output channels x 16 positions, so
 * that C's rows are y's and go out without a transpose, two tiles' rows
 * rounded by one vcvtne2ps2bf16 into a 64-byte run. With one tap every B
 * tile starts at a multiple of 16 positions (the taps of a wider filter
 * are what kept this product off aligned loads, see the channel-last
 * kernel), and the pairs are laid out a block of 32 positions at a time
 * into an L1 buffer, the next block's while this one's tiles run, where
 * the channel-last bands of a deep 1x1 layer went through the L3 (256 ->
 * 64 channels at 56x56: 112 us for the bands and 120 for the kernel
 * reading them twice). Tiles: C0/C1 vector v at positions 0-15 / 16-31,
 * C2/C3 vector v + 1; A in tmm4 / tmm5, B in tmm6 / tmm7. */

/* Positions [q0, q0 + nb) of every channel pair as B tiles in buf:
 * buf[((cb*2 + h)*16 + r)*32 + 2*j + i] = x[(32*cb + 2*r + i)*nq + q0 + 16*h + j],
 * zero past nb and nc. */
AMX_TARGET ALWAYS_INLINE void gemm_pack(const uint16_t *x, int64_t nc, int64_t nq, int64_t q0,
					int nb, int64_t ncb, uint16_t *buf)
{
	const __m512i z = _mm512_setzero_si512();
	const __mmask32 m = nb >= 32 ? (__mmask32)~0u : (__mmask32)((1u << nb) - 1u);
	__m512i lo, hi;

	pair_idx(&lo, &hi);
	for (int64_t pr = 0; pr < ncb * 16; pr++) {
		int64_t c = 2 * pr;
		__m512i va = c < nc ? _mm512_maskz_loadu_epi16(m, x + c * nq + q0) : z;
		__m512i vb = c + 1 < nc ? _mm512_maskz_loadu_epi16(m, x + (c + 1) * nq + q0) : z;
		uint16_t *d = buf + ((pr / 16) * 2 * 16 + pr % 16) * 32;

		_mm512_store_si512((void *)d, _mm512_permutex2var_epi16(va, lo, vb));
		_mm512_store_si512((void *)(d + 512), _mm512_permutex2var_epi16(va, hi, vb));
	}
}

/* A finished C pair (positions 0-15 in c[0], 16-31 in c[1], nb of them)
 * to nr rows of y, nq apart. */
AMX_TARGET ALWAYS_INLINE void gemm_put(const float *c0, const float *c1, int nr, int nb,
				       uint16_t *y, int64_t nq, int cvtne)
{
	const __mmask32 m = nb >= 32 ? (__mmask32)~0u : (__mmask32)((1u << nb) - 1u);

	for (int r = 0; r < nr; r++) {
		__m512 a = _mm512_load_ps(c0 + 16 * r), b = _mm512_load_ps(c1 + 16 * r);
		__m512i v = cvtne ? (__m512i)_mm512_cvtne2ps_pbh(b, a) :
				    _mm512_inserti64x4(_mm512_castsi256_si512(bf16_pack16(a)),
						       bf16_pack16(b), 1);

		_mm512_mask_storeu_epi16((void *)(y + r * nq), m, v);
	}
}

/* One finished step of two vectors, waiting in a cbuf half for its way
 * out: y at its first row, rows of each vector, positions. */
struct gemm_out {
	uint16_t *y;
	int nr0, nr1, nb;
};

AMX_TARGET ALWAYS_INLINE void gemm_put_out(float (*cb)[256], const struct gemm_out *o,
					   int64_t nq, int cvtne)
{
	gemm_put(cb[0], cb[1], o->nr0, o->nb, o->y, nq, cvtne);
	if (o->nr1)
		gemm_put(cb[2], cb[3], o->nr1, o->nb, o->y + 16 * nq, nq, cvtne);
}

AMX_TARGET ALWAYS_INLINE void gemm_kernel(const uint16_t *x, int64_t nc, int64_t nq,
					  const uint16_t *a, int64_t nk, uint16_t *y, uint16_t *buf,
					  int cvtne)
{
	/* two steps' C tiles: the one before goes out while this one's
	 * tdpbf16ps run (a tile's rows loaded right behind _tile_stored
	 * waited for the store) */
	float cbuf[2][4][256] __attribute__((aligned(64)));
	struct gemm_out pend = { 0 };
	const int64_t ncb = (nc + 31) / 32, nv = (nk + 15) / 16;
	int waiting = 0, ci = 0;

	amx_config_full();
	gemm_pack(x, nc, nq, 0, nq < 32 ? (int)nq : 32, ncb, buf);
	for (int64_t q0 = 0, bi = 0; q0 < nq; q0 += 32, bi ^= 1) {
		const int nb = nq - q0 < 32 ? (int)(nq - q0) : 32, two = nb > 16;
		const uint16_t *bb = buf + bi * 1024 * ncb;

		for (int64_t v = 0; v < nv; v += 2, ci ^= 1) {
			const int pair = v + 1 < nv;

			_tile_zero(0);
			_tile_zero(1);
			_tile_zero(2);
			_tile_zero(3);
			for (int64_t cb = 0; cb < ncb; cb++) {
				const uint16_t *b = bb + cb * 1024;

				_tile_loadd(4, a + (v * ncb + cb) * 512, 64);
				_tile_loadd(6, b, 64);
				_tile_dpbf16ps(0, 4, 6);
				if (two) {
					_tile_loadd(7, b + 512, 64);
					_tile_dpbf16ps(1, 4, 7);
				}
				if (pair) {
					_tile_loadd(5, a + ((v + 1) * ncb + cb) * 512, 64);
					_tile_dpbf16ps(2, 5, 6);
					if (two)
						_tile_dpbf16ps(3, 5, 7);
				}
				if (cb)
					continue;
				/* under the first step's tile instructions: the step
				 * before goes out, and at a block's first step the
				 * next block's pairs are laid out (the other half of
				 * buf, whose tiles the block before has loaded) */
				if (waiting)
					gemm_put_out(cbuf[ci ^ 1], &pend, nq, cvtne);
				waiting = 0;
				if (!v && q0 + 32 < nq)
					gemm_pack(x, nc, nq, q0 + 32,
						  nq - q0 - 32 < 32 ? (int)(nq - q0 - 32) : 32, ncb,
						  buf + (bi ^ 1) * 1024 * ncb);
			}
			_tile_stored(0, cbuf[ci][0], 64);
			_tile_stored(1, cbuf[ci][1], 64);
			if (pair) {
				_tile_stored(2, cbuf[ci][2], 64);
				_tile_stored(3, cbuf[ci][3], 64);
			}
			pend.y = y + 16 * v * nq + q0;
			pend.nr0 = nk - 16 * v < 16 ? (int)(nk - 16 * v) : 16;
			pend.nr1 = !pair ? 0 : nk - 16 * (v + 1) < 16 ? (int)(nk - 16 * (v + 1)) : 16;
			pend.nb = nb;
			waiting = 1;
		}
	}
	_tile_release();
	if (waiting)
		gemm_put_out(cbuf[ci ^ 1], &pend, nq, cvtne);
}

AMX_TARGET void ops_avx512_conv_bf16_gemm(const uint16_t *x, int64_t nc, int64_t nq,
					  const uint16_t *a, int64_t nk, uint16_t *y,
					  uint16_t *buf)
{
	if (amx_cvtne)
		gemm_kernel(x, nc, nq, a, nk, y, buf, 1);
	else
		gemm_kernel(x, nc, nq, a, nk, y, buf, 0);
}
