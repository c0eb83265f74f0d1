/* ops/gemm_f32.c: the AVX2 FMA register-blocked microkernels of conv2d
 * (fp32 in, fp32 out): 6 x 16 accumulators = 12 ymm registers, two vector
 * loads and six broadcasts per 12 FMAs. */
#include <immintrin.h>

#include "conv2d_int.h"

/* Direct: the 6 pixels broadcast their input value for term i (a channel,
 * filter row and column folded into off[i]); the 16 output channels of the
 * packed weights wp are two vectors. -ffp-contract=off is global, so the
 * FMAs are explicit. */
void ops_conv_kern_direct_6x16(const float *const pix[6], const int32_t *off,
			       int64_t nterm, const float *wp, float *out)
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
void ops_conv_kern_gemm_6x16(const float *a, const float *b, int64_t kdim,
			     float *out, int64_t ldo, int accumulate)
{
	__m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
	__m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
	__m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
	__m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
	__m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
	__m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
	int64_t i;

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
