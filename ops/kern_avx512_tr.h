/* ops/kern_avx512_tr.h: the 16 x 16 fp32 register transpose of the AVX-512
 * path, shared by its permute (ops/kern_avx512.c) and its channels-along-lanes
 * conv kernel (ops/kern_avx512_convcl.c). Included inside those files' AVX-512
 * target pragma, after they define ALWAYS_INLINE. Never included outside ops/. */
#ifndef OPS_KERN_AVX512_TR_H
#define OPS_KERN_AVX512_TR_H

#include <immintrin.h>

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
#endif
