/* ops/kern_avx512_inl.h: AVX-512 helpers that both AVX-512 kernel files
 * inline (ops/kern_avx512.c, ops/kern_avx512_conv.c). Included where the
 * including file has switched its functions to the AVX-512 target. */
#ifndef OPS_KERN_AVX512_INL_H
#define OPS_KERN_AVX512_INL_H

#include <immintrin.h>

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
