/* ops/kern_wino.h: the Winograd F(4x4, 3x3) kernels of every host path,
 * written once over a lane type (as kern_act.h is) with the channels along
 * the lanes, so that every transform is vertical: no shuffles, the same
 * operations on 1, 8 or 16 lanes. ops/conv_wino.c states the algorithm and
 * the layouts; ops_kern (isa_int.h) the contracts. Included by
 * ops/kern_<isa>.c after kern_act.h, with, beside kern_act.h's macros:
 *   VL               lanes of VF
 *   VLD(p) VST(p, v) unaligned load and store of VL floats
 *   VBC(p)           *p broadcast to every lane
 *   VZERO            all lanes 0
 *   WG_BP, WG_BK     the GEMM's register block: WG_BP rows (Winograd
 *                    tiles) x WG_BK vectors of output channels
 * and the name prefix WG_NAME(x) of the path's functions.
 * Never included outside ops/. */
#ifndef OPS_KERN_WINO_H
#define OPS_KERN_WINO_H

/* The register blocks' loops unrolled whole, so that the arrays of vectors
 * become registers (gcc -O2 keeps them on the stack otherwise: the GEMM ran
 * at a quarter of its speed). */
#define WG_UNROLL _Pragma("GCC unroll 16")

/* B^T d on six values (Lavin & Gray, "Fast Algorithms for Convolutional
 * Neural Networks", 2016, with the points 0, 1, -1, 2, -2 and infinity):
 *   o0 = 4 d0 - 5 d2 + d4        o3 = (d4 - d2) + 2 (d3 - d1)
 *   o1 = (d4 - 4 d2) + (d3 - 4 d1)   o4 = (d4 - d2) - 2 (d3 - d1)
 *   o2 = (d4 - 4 d2) - (d3 - 4 d1)   o5 = 4 d1 - 5 d3 + d5
 * 13 operations (WINO_IN_OPS counts 12 of these a tile). */
ALWAYS_INLINE void WG_NAME(bt6)(const VF d[6], VF o[6])
{
	const VF a = VFMA(V1(-4.0f), d[2], d[4]), b = VFMA(V1(-4.0f), d[1], d[3]);
	const VF c = VSUB(d[4], d[2]), e = VMUL(V1(2.0f), VSUB(d[3], d[1]));

	o[0] = VFMA(V1(4.0f), d[0], VFMA(V1(-5.0f), d[2], d[4]));
	o[1] = VADD(a, b);
	o[2] = VSUB(a, b);
	o[3] = VADD(c, e);
	o[4] = VSUB(c, e);
	o[5] = VFMA(V1(4.0f), d[1], VFMA(V1(-5.0f), d[3], d[5]));
}

/* A^T m on six values: o0 = m0 + (m1 + m2) + (m3 + m4), o1 = (m1 - m2) +
 * 2 (m3 - m4), o2 = (m1 + m2) + 4 (m3 + m4), o3 = (m1 - m2) + 8 (m3 - m4)
 * + m5. 10 operations. */
ALWAYS_INLINE void WG_NAME(at6)(const VF m[6], VF o[4])
{
	const VF s12 = VADD(m[1], m[2]), d12 = VSUB(m[1], m[2]);
	const VF s34 = VADD(m[3], m[4]), d34 = VSUB(m[3], m[4]);

	o[0] = VADD(VADD(m[0], s12), s34);
	o[1] = VFMA(V1(2.0f), d34, d12);
	o[2] = VFMA(V1(4.0f), s34, s12);
	o[3] = VADD(VFMA(V1(8.0f), d34, d12), m[5]);
}

/* G g on three values: u0 = g0 / 4, u1 = -(g0 + g1 + g2) / 6, u2 = -(g0 -
 * g1 + g2) / 6, u3 = g0 / 24 + g1 / 12 + g2 / 6, u4 = g0 / 24 - g1 / 12 +
 * g2 / 6, u5 = g2. 12 operations. */
ALWAYS_INLINE void WG_NAME(g3)(const VF g[3], VF u[6])
{
	const VF s = VADD(g[0], g[2]), p = VFMA(V1(1.0f / 24.0f), g[0], VMUL(V1(1.0f / 6.0f), g[2]));
	const VF q = VMUL(V1(1.0f / 12.0f), g[1]);

	u[0] = VMUL(V1(0.25f), g[0]);
	u[1] = VMUL(V1(-1.0f / 6.0f), VADD(s, g[1]));
	u[2] = VMUL(V1(-1.0f / 6.0f), VSUB(s, g[1]));
	u[3] = VADD(p, q);
	u[4] = VSUB(p, q);
	u[5] = g[2];
}

/* B^T (n 6) or G (n 3) on n values, to six: n a constant where inlined. */
ALWAYS_INLINE void WG_NAME(fwd1)(const VF *in, VF o[6], const int n)
{
	if (n == 6)
		WG_NAME(bt6)(in, o);
	else
		WG_NAME(g3)(in, o);
}

/* The 2-D forward transform of an n x n block, element (i, j) of channel
 * c at s + i*ldr + j*ldc + c: along i, then along j, to the 6 x 6
 * positions x = 6i + j at o[x*ldx + c], for c < nc. */
ALWAYS_INLINE void WG_NAME(fwd2)(const float *s, int64_t ldr, int64_t ldc, int64_t nc, float *o,
				 int64_t ldx, const int n)
{
	for (int64_t c = 0; c < nc; c += VL) {
		VF t[6][6];

		WG_UNROLL
		for (int j = 0; j < n; j++) {
			VF col[6], r[6];

			WG_UNROLL
			for (int i = 0; i < n; i++)
				col[i] = VLD(s + i * ldr + j * ldc + c);
			WG_NAME(fwd1)(col, r, n);
			WG_UNROLL
			for (int i = 0; i < 6; i++)
				t[i][j] = r[i];
		}
		WG_UNROLL
		for (int i = 0; i < 6; i++) {
			VF r[6];

			WG_NAME(fwd1)(t[i], r, n);
			WG_UNROLL
			for (int j = 0; j < 6; j++)
				VST(o + (i * 6 + j) * ldx + c, r[j]);
		}
	}
}

/* The input transform of one Winograd tile (ops_kern.wino_in). */
static void WG_NAME(wino_in)(const float *d, int64_t ldr, int64_t ldc, int64_t nc, float *v,
			     int64_t ldx)
{
	WG_NAME(fwd2)(d, ldr, ldc, nc, v, ldx, 6);
}

/* The output transform of one Winograd tile (ops_kern.wino_out). */
static void WG_NAME(wino_out)(const float *m, int64_t ldx, int64_t nk, float *o, int64_t ldr,
			      int64_t ldc, int nr, int ncol, int add)
{
	for (int64_t k = 0; k < nk; k += VL) {
		VF t[4][6];

		WG_UNROLL
		for (int j = 0; j < 6; j++) {
			VF col[6], r[4];

			WG_UNROLL
			for (int i = 0; i < 6; i++)
				col[i] = VLD(m + (i * 6 + j) * ldx + k);
			WG_NAME(at6)(col, r);
			WG_UNROLL
			for (int i = 0; i < 4; i++)
				t[i][j] = r[i];
		}
		WG_UNROLL
		for (int i = 0; i < nr; i++) {
			VF r[4];

			WG_NAME(at6)(t[i], r);
			WG_UNROLL
			for (int j = 0; j < ncol; j++) {
				float *p = o + i * ldr + j * ldc + k;
				VST(p, add ? VADD(VLD(p), r[j]) : r[j]);
			}
		}
	}
}

/* The filter transform of one input channel (ops_kern.wino_wt): the 3x3
 * filter's element e = 3r + s at g + e*lde. */
static void WG_NAME(wino_wt)(const float *g, int64_t lde, int64_t nk, float *u, int64_t ldx)
{
	WG_NAME(fwd2)(g, 3 * lde, lde, nk, u, ldx, 3);
}

/* A bp x bk block of the GEMM (bp rows, bk vectors of channels), bp and bk
 * constants where it is inlined, so the sums stay in registers. */
ALWAYS_INLINE void WG_NAME(gemm_block)(const float *v, int64_t ldv, const float *u, int64_t ldu,
				       float *m, int64_t ldm, int64_t nc, const int bp, const int bk)
{
	VF acc[WG_BP][WG_BK];

	WG_UNROLL
	for (int i = 0; i < bp; i++)
		WG_UNROLL
		for (int j = 0; j < bk; j++)
			acc[i][j] = VZERO;
	for (int64_t c = 0; c < nc; c++) {
		VF w[WG_BK];

		WG_UNROLL
		for (int j = 0; j < bk; j++)
			w[j] = VLD(u + c * ldu + j * VL);
		WG_UNROLL
		for (int i = 0; i < bp; i++) {
			const VF b = VBC(v + i * ldv + c);

			WG_UNROLL
			for (int j = 0; j < bk; j++)
				acc[i][j] = VFMA(b, w[j], acc[i][j]);
		}
	}
	WG_UNROLL
	for (int i = 0; i < bp; i++)
		WG_UNROLL
		for (int j = 0; j < bk; j++)
			VST(m + i * ldm + j * VL, acc[i][j]);
}

/* The rows of one column block, bk constant: whole WG_BP blocks, then the
 * remainder through a switch, each case a block of constant size. */
ALWAYS_INLINE void WG_NAME(gemm_cols)(const float *v, int64_t ldv, const float *u, int64_t ldu,
				      float *m, int64_t ldm, int64_t np, int64_t nc, const int bk)
{
	int64_t p = 0;

	for (; p + WG_BP <= np; p += WG_BP)
		WG_NAME(gemm_block)(v + p * ldv, ldv, u, ldu, m + p * ldm, ldm, nc, WG_BP, bk);
	switch ((int)(np - p)) {
#define WG_TAIL(n) case n: WG_NAME(gemm_block)(v + p * ldv, ldv, u, ldu, m + p * ldm, ldm, \
					       nc, (n) < WG_BP ? (n) : 1, bk); break;
	WG_TAIL(1) WG_TAIL(2) WG_TAIL(3) WG_TAIL(4) WG_TAIL(5)
#undef WG_TAIL
	default: break;
	}
}

/* The GEMM of one transformed position (ops_kern.wino_gemm). */
static void WG_NAME(wino_gemm)(const float *v, int64_t ldv, const float *u, int64_t ldu,
			       float *m, int64_t ldm, int64_t np, int64_t nk, int64_t nc)
{
	int64_t nkv = nk / VL, k = 0;

	for (; k + WG_BK <= nkv; k += WG_BK)
		WG_NAME(gemm_cols)(v, ldv, u + k * VL, ldu, m + k * VL, ldm, np, nc, WG_BK);
	for (; k < nkv; k++)
		WG_NAME(gemm_cols)(v, ldv, u + k * VL, ldu, m + k * VL, ldm, np, nc, 1);
}

#endif
