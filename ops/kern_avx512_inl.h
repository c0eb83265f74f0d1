/* ops/kern_avx512_inl.h: AVX-512 helpers that the AVX-512 kernel files
 * inline (ops/kern_avx512.c, ops/kern_avx512_conv.c, ops/kern_avx512_lanes.c):
 * the 16 x 16 fp32 register transpose and the bf16 rounding of 16 lanes.
 * Included inside those files' AVX-512 target pragma (after kern_act.h's
 * ALWAYS_INLINE where they have it). Never included outside ops/. */
#ifndef OPS_KERN_AVX512_INL_H
#define OPS_KERN_AVX512_INL_H

#include <immintrin.h>

#ifndef ALWAYS_INLINE
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#endif

/* The shuffle network of a 16 x 16 block: u[] from the rows r[]: interleaved
 * at 32 and 64 bits within 128-bit lanes (then u[4k+c] holds, in lane L,
 * column 4L+c of rows 4k..4k+3). */
ALWAYS_INLINE void tr16_lanes(const __m512 *r, __m512 *u)
{
	__m512 t[16];

	/* unrolled, so that the rows stay in registers (gcc at -O2 kept
	 * the loops and went through the stack) */
#pragma GCC unroll 8
	for (int k = 0; k < 8; k++) {
		t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
		t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
	}
#pragma GCC unroll 4
	for (int k = 0; k < 4; k++) {
		u[4 * k] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
		u[4 * k + 1] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0xee);
		u[4 * k + 2] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
		u[4 * k + 3] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xee);
	}
}

/* A whole 16 x 16 transpose in registers: o[j] = column j of the rows r[]
 * (tr16_lanes, then the 128-bit lanes across the four groups). */
ALWAYS_INLINE void tr16_regs(const __m512 *r, __m512 *o)
{
	__m512 u[16];

	tr16_lanes(r, u);
#pragma GCC unroll 4
	for (int c = 0; c < 4; c++) {
		__m512 v = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
		__m512 w = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd);
		__m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
		__m512 w2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);
		o[c] = _mm512_shuffle_f32x4(v, v2, 0x88);
		o[4 + c] = _mm512_shuffle_f32x4(w, w2, 0x88);
		o[8 + c] = _mm512_shuffle_f32x4(v, v2, 0xdd);
		o[12 + c] = _mm512_shuffle_f32x4(w, w2, 0xdd);
	}
}

/* 16 fp32 lanes to bf16, the scalar rounding: + 0x7fff + the lowest kept
 * bit, truncated; a NaN truncated with its quiet bit set. (vcvtneps2bf16
 * would flush subnormals, which the scalar conversion keeps.) */
static inline __m256i bf16_pack16(__m512 v)
{
	const __m512i u = _mm512_castps_si512(v);
	__m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
	__m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
	__m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
	r = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), r, quiet);
	return _mm512_cvtepi32_epi16(r);
}

#endif
