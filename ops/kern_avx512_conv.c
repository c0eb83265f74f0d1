/* ops/kern_avx512_conv.c: the AVX-512 direct conv kernel over a unit-stride
 * run of output pixels (isa_int.h, conv_direct_px): pixels along the zmm
 * lanes, output channels as broadcast weights, fp32 FMA. Compiled for
 * AVX-512 by the pragma below whatever the build flags; reached only through
 * ops_kern_avx512 on a host that has it (ops/isa.c). */
#include "isa_int.h"

#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")
#endif

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Register block: KR output channels x NV 16-pixel vectors of accumulators
 * (8 x 3 = 24 zmm, 3 more for the inputs). Per term: NV loads of inputs and
 * KR broadcast weights (11 loads) feed KR*NV FMAs (24): the two FMA pipes
 * bound the loop, not the two load ports. The block's last vector is
 * masked to the run's end, so nothing past x[off[i] + nq - 1] is read. */
#define PX_KR 8
#define PX_NV 3

/* The accumulators are named variables, not an array: with an array gcc
 * kept them on the stack, stored back every term. */
#define PX_ROW(r)                                                                       \
	do {                                                                            \
		if (KR > r) {                                                           \
			__m512 b = _mm512_set1_ps(wi[r]);                               \
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

ALWAYS_INLINE void px_block(const int KR, const int NV, __mmask16 mlast, const float *x,
			    const int32_t *off, int64_t nterm, const float *w, float *out,
			    int64_t ldo)
{
	const __m512 z = _mm512_setzero_ps();
	PX_DECL(0); PX_DECL(1); PX_DECL(2); PX_DECL(3);
	PX_DECL(4); PX_DECL(5); PX_DECL(6); PX_DECL(7);

	for (int64_t i = 0; i < nterm; i++) {
		const float *xp = x + off[i];
		const float *wi = w + 16 * i;
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
			px_block(KR, 3, m, x, off, nterm, w, out, ldo);                 \
		else if (nv == 2)                                                       \
			px_block(KR, 2, m, x, off, nterm, w, out, ldo);                 \
		else                                                                    \
			px_block(KR, 1, m, x, off, nterm, w, out, ldo);                 \
		break

static void px_dispatch(int kr, int nv, __mmask16 m, const float *x, const int32_t *off,
			int64_t nterm, const float *w, float *out, int64_t ldo)
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
			       const float *wp, int nk, int64_t nq, float *out, int64_t ldo)
{
	for (int64_t q0 = 0; q0 < nq; q0 += 16 * PX_NV) {
		int64_t left = nq - q0;
		int nv = left >= 16 * PX_NV ? PX_NV : (int)((left + 15) / 16);
		int64_t tail = left - 16 * (nv - 1);
		__mmask16 m = tail >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << tail) - 1u);

		for (int k0 = 0; k0 < nk; k0 += PX_KR) {
			int kr = nk - k0 < PX_KR ? nk - k0 : PX_KR;

			px_dispatch(kr, nv, m, x + q0, off, nterm, wp + k0, out + k0 * ldo + q0,
				    ldo);
		}
	}
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
