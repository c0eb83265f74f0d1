/* ops/kern_scalar.c: the portable C path of every host kernel family, for
 * x86-64 CPUs without AVX2 (and OPREVIEW_ISA=scalar): the same activation
 * math as the vector paths (kern_act.h, so the same bits), plain loops for
 * conv, GEMM, the exact int8 GEMM, transposes, copies and conversions. */
#include "isa_int.h"
#include "qgemm_int.h"

#include <math.h>
#include <string.h>

/* ---- activations ---------------------------------------------------------------- */

static inline float s_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

static inline uint32_t s_word(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

static inline float s_min(float a, float b) { return a < b ? a : b; }
static inline float s_max(float a, float b) { return a > b ? a : b; }
static inline int32_t s_cvti(float a) { return a != a ? INT32_MIN : (int32_t)a; }
static inline float s_or(float a, float b) { return s_bits(s_word(a) | s_word(b)); }
static inline float s_sign(float a) { return s_bits(s_word(a) & 0x80000000u); }
static inline float s_pow2(int32_t n) { return s_bits((uint32_t)(n + 127) << 23); }
/* (gcc and clang shift a negative int arithmetically, as vpsrad does) */
static inline int32_t s_half(int32_t n) { return n >> 1; }
static inline int32_t s_isub(int32_t a, int32_t b) { return a - b; }

#define VF float
#define VI int32_t
#define VM int
#define V1(c) ((float)(c))
#define VADD(a, b) ((a) + (b))
#define VSUB(a, b) ((a) - (b))
#define VMUL(a, b) ((a) * (b))
#define VDIV(a, b) ((a) / (b))
#define VMIN s_min
#define VMAX s_max
#define VFMA fmaf
#define VFNMA(a, b, c) fmaf(-(a), (b), (c))
#define VROUND nearbyintf
#define VABS fabsf
#define VSIGN s_sign
#define VOR s_or
#define VCVTI s_cvti
#define VPOW2 s_pow2
#define VHALF s_half
#define VISUB s_isub
#define VEQ(a, b) ((a) == (b))
#define VGE(a, b) ((a) >= (b))
#define VLT(a, b) ((a) < (b))
#define VSEL(m, a, b) ((m) ? (b) : (a))
#include "kern_act.h"

/* ---- Winograd F(4x4, 3x3): the shared kernels (kern_wino.h) on 1 lane ---- */
#define VL 1
#define VLD(p) (*(p))
#define VST(p, v) (*(p) = (v))
#define VBC(p) (*(p))
#define VZERO 0.0f
#define WG_BP 4
#define WG_BK 4
#define WG_NAME(x) scalar_##x
/* (a multiply and an add: fmaf is a library call on baseline x86-64) */
#undef VFMA
#define VFMA(a, b, c) ((a) * (b) + (c))
#include "kern_wino.h"

#define SCALAR_MAP(f)                               \
	do {                                        \
		for (size_t i = 0; i < n; i++)      \
			y[i] = f(x[i]);             \
	} while (0)

static void scalar_act_f32(enum ops_act a, const float *x, float *y, size_t n)
{
	switch (a) {
	case OPS_ACT_RELU:
		SCALAR_MAP(v_relu);
		return;
	case OPS_ACT_GELU_ERF:
		SCALAR_MAP(v_gelu_erf);
		return;
	case OPS_ACT_GELU_TANH:
		SCALAR_MAP(v_gelu_tanh);
		return;
	case OPS_ACT_SILU:
		SCALAR_MAP(v_silu);
		return;
	case OPS_ACT_SIGMOID:
		SCALAR_MAP(v_sigmoid);
		return;
	case OPS_ACT_TANH:
		SCALAR_MAP(v_tanh);
		return;
	case OPS_ACT_NONE:
	case OPS_NACTS:
		break;
	}
	/* none (and anything unknown) is the identity */
	if (x != y)
		memmove(y, x, n * sizeof *y);
}

/* ---- conv2d and the fp32 GEMM ------------------------------------------------------ */

static void scalar_conv_direct(const float *const *pix, const int32_t *off, int64_t nterm,
			       const float *wp, int64_t wstride, float *out)
{
	(void)wstride; /* 16 channels: one panel */
	memset(out, 0, 6 * 16 * sizeof *out);
	for (int64_t i = 0; i < nterm; i++, wp += 16)
		for (int p = 0; p < 6; p++) {
			float v = pix[p][off[i]];

			for (int k = 0; k < 16; k++)
				out[p * 16 + k] += v * wp[k];
		}
}

static void scalar_conv_gemm(const float *a, const float *b, int64_t bstride, int64_t kdim,
			     float *out, int64_t ldo, int accumulate)
{
	float acc[6][16];

	(void)bstride; /* 16 columns: one panel */
	memset(acc, 0, sizeof acc);
	for (int64_t i = 0; i < kdim; i++, a += 6, b += 16)
		for (int r = 0; r < 6; r++)
			for (int c = 0; c < 16; c++)
				acc[r][c] += a[r] * b[c];
	for (int r = 0; r < 6; r++)
		for (int c = 0; c < 16; c++)
			out[r * ldo + c] = accumulate ? out[r * ldo + c] + acc[r][c] : acc[r][c];
}

/* ---- qgemm ---------------------------------------------------------------------- */

/* int32 per K tile is exact: kk <= OPS_QGEMM_MAX_TILE_KK bounds the sum. */
static void scalar_qgemm_colsum(const int8_t *b, int64_t ldb, int64_t tn, int64_t kk,
				int32_t *cs);

static void scalar_qgemm(enum ops_dtype at, const void *a, int64_t lda, const int8_t *b,
			 int64_t ldb, int64_t m, int64_t tn, int64_t kk, int32_t *c, int32_t *cs,
			 int16_t *a16)
{
	(void)a16;
	if (cs)
		scalar_qgemm_colsum(b, ldb, tn, kk, cs);
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < tn; j++) {
			const int8_t *bj = b + j * ldb;
			int32_t s = 0;

			if (at == OPS_U8) {
				const uint8_t *ai = (const uint8_t *)a + i * lda;
				for (int64_t q = 0; q < kk; q++)
					s += (int32_t)ai[q] * bj[q];
			} else {
				const int8_t *ai = (const int8_t *)a + i * lda;
				for (int64_t q = 0; q < kk; q++)
					s += (int32_t)ai[q] * bj[q];
			}
			c[i * tn + j] = s;
		}
}

static void scalar_qgemm_colsum(const int8_t *b, int64_t ldb, int64_t tn, int64_t kk,
				int32_t *cs)
{
	for (int64_t j = 0; j < tn; j++) {
		int32_t s = 0;

		for (int64_t q = 0; q < kk; q++)
			s += b[j * ldb + q];
		cs[j] = s;
	}
}

/* ---- permute: cache-blocked transposes, plain copies ------------------------------ */

#define TR_BLOCK 64
#define DEFINE_SCALAR_TRANSPOSE(name, type)                                              \
	static void name(const void *sv, int64_t lds, void *dv, int64_t ldd, int64_t rows, \
			 int64_t cols)                                                     \
	{                                                                                 \
		const type *src = sv;                                                     \
		type *dst = dv;                                                           \
		for (int64_t i0 = 0; i0 < rows; i0 += TR_BLOCK)                           \
			for (int64_t j0 = 0; j0 < cols; j0 += TR_BLOCK) {                 \
				int64_t i1 = i0 + TR_BLOCK < rows ? i0 + TR_BLOCK : rows; \
				int64_t j1 = j0 + TR_BLOCK < cols ? j0 + TR_BLOCK : cols; \
				for (int64_t i = i0; i < i1; i++)                         \
					for (int64_t j = j0; j < j1; j++)                 \
						dst[j * ldd + i] = src[i * lds + j];      \
			}                                                                 \
	}
DEFINE_SCALAR_TRANSPOSE(scalar_transpose_u8, uint8_t)
DEFINE_SCALAR_TRANSPOSE(scalar_transpose_u16, uint16_t)
DEFINE_SCALAR_TRANSPOSE(scalar_transpose_u32, uint32_t)

/* ops_kern.transpose_half_f32 and _f32_half: each destination row from
 * its first element to its last, converted as the scalar conversions do. */
static void scalar_transpose_half_f32(enum ops_dtype t, const uint16_t *src, int64_t lds,
				      float *dst, int64_t ldd, int64_t rows, int64_t cols)
{
	for (int64_t j = 0; j < cols; j++)
		for (int64_t i = 0; i < rows; i++)
			dst[j * ldd + i] = t == OPS_BF16 ? ops_bf16_to_f32(src[i * lds + j]) :
							   ops_f16_to_f32(src[i * lds + j]);
}

static void scalar_transpose_f32_half(enum ops_dtype t, const float *src, int64_t lds,
				      uint16_t *dst, int64_t ldd, int64_t rows, int64_t cols)
{
	for (int64_t j = 0; j < cols; j++)
		for (int64_t i = 0; i < rows; i++)
			dst[j * ldd + i] = t == OPS_BF16 ? ops_f32_to_bf16(src[i * lds + j]) :
							   ops_f32_to_f16(src[i * lds + j]);
}

/* ops_kern.transpose_f32_dst_rows: each destination row from its first
 * element to its last. */
static void scalar_transpose_f32_dst_rows(const void *sv, int64_t lds, void *dv, int64_t ldd,
					  int64_t rows, int64_t cols)
{
	const float *src = sv;
	float *dst = dv;

	for (int64_t j = 0; j < cols; j++)
		for (int64_t i = 0; i < rows; i++)
			dst[j * ldd + i] = src[i * lds + j];
}

static void scalar_stream_bytes(unsigned char *d, const unsigned char *s, size_t n)
{
	memcpy(d, s, n);
}

static void scalar_copy_rows(unsigned char *d, int64_t ldd, const unsigned char *s,
			     int64_t lds, size_t n, int64_t rows)
{
	for (int64_t r = 0; r < rows; r++)
		memcpy(d + r * ldd, s + r * lds, n);
}

/* ---- conversions ---------------------------------------------------------------- */

static void scalar_half_to_f32(enum ops_dtype t, const uint16_t *s, float *d, size_t n)
{
	if (t == OPS_F16)
		for (size_t i = 0; i < n; i++)
			d[i] = ops_f16_to_f32(s[i]);
	else
		for (size_t i = 0; i < n; i++)
			d[i] = ops_bf16_to_f32(s[i]);
}

static void scalar_f32_to_half(enum ops_dtype t, const float *s, uint16_t *d, size_t n)
{
	if (t == OPS_F16)
		for (size_t i = 0; i < n; i++)
			d[i] = ops_f32_to_f16(s[i]);
	else
		for (size_t i = 0; i < n; i++)
			d[i] = ops_f32_to_bf16(s[i]);
}

const struct ops_kern ops_kern_scalar = {
	.isa = OPS_ISA_SCALAR,
	.path = {
		[OPS_KF_CONV] = "scalar",
		[OPS_KF_GEMM] = "scalar",
		[OPS_KF_QGEMM] = "scalar",
		[OPS_KF_ACT] = "scalar",
		[OPS_KF_PERMUTE] = "scalar",
		[OPS_KF_CONVERT] = "scalar",
	},
	.direct_pb = { 6, 0 },
	.conv_direct = scalar_conv_direct,
	.gemm_nw = 16,
	.conv_gemm = scalar_conv_gemm,
	.wino_in = scalar_wino_in,
	.wino_out = scalar_wino_out,
	.wino_wt = scalar_wino_wt,
	.wino_gemm = scalar_wino_gemm,
	.qgemm = scalar_qgemm,
	.qgemm_colsum = scalar_qgemm_colsum,
	.act_f32 = scalar_act_f32,
	.act_f32_stream = scalar_act_f32,
	.transpose = { scalar_transpose_u8, scalar_transpose_u16, scalar_transpose_u32 },
	.transpose_f32_dst_rows = scalar_transpose_f32_dst_rows,
	.transpose_half_f32 = scalar_transpose_half_f32,
	.transpose_f32_half = scalar_transpose_f32_half,
	.stream_bytes = scalar_stream_bytes,
	.copy_rows = scalar_copy_rows,
	.half_to_f32 = scalar_half_to_f32,
	.f32_to_half = scalar_f32_to_half,
};
