/* ops/dtype.c: names and sizes of dtypes, spaces, activations and groups;
 * fp16 (F16C) and bf16 (software, round to nearest even) conversions, scalar
 * and vectorised; the fp64 reference activations. */
#include "ops.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

/* ---- dtypes ---------------------------------------------------------------- */

static const char *const dtype_names[OPS_NDTYPES] = {
	"fp32", "fp16", "bf16", "s8", "u8", "s32"
};
static const size_t dtype_sizes[OPS_NDTYPES] = { 4, 2, 2, 1, 1, 4 };

const char *ops_dtype_name(enum ops_dtype t)
{
	return (unsigned)t < OPS_NDTYPES ? dtype_names[t] : "?";
}

size_t ops_dtype_size(enum ops_dtype t)
{
	return (unsigned)t < OPS_NDTYPES ? dtype_sizes[t] : 0;
}

int ops_dtype_parse(const char *s, enum ops_dtype *out)
{
	if (!s)
		return OPR_EINPUT;
	if (strcmp(s, "int8") == 0) {
		*out = OPS_S8;
		return 0;
	}
	for (int i = 0; i < OPS_NDTYPES; i++)
		if (strcmp(s, dtype_names[i]) == 0) {
			*out = (enum ops_dtype)i;
			return 0;
		}
	return OPR_EINPUT;
}

/* ---- scalar conversions -------------------------------------------------------- */

uint16_t ops_f32_to_f16(float f)
{
	/* imm 0 = round to nearest even; overflow gives inf, NaN stays NaN */
	return (uint16_t)_cvtss_sh(f, 0);
}

float ops_f16_to_f32(uint16_t h)
{
	return _cvtsh_ss(h);
}

/* bf16 is the top half of an fp32. Round to nearest even: add 0x7fff plus the
 * lowest kept bit, then truncate. A NaN is truncated with the quiet bit set
 * so that rounding can never turn it into an infinity. */
uint16_t ops_f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40u);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float ops_bf16_to_f32(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

/* ---- vector conversions ------------------------------------------------------ */

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

void ops_to_f32(enum ops_dtype t, const void *src, float *dst, size_t n)
{
	size_t i = 0;

	switch (t) {
	case OPS_F32:
		memmove(dst, src, n * sizeof(float));
		return;
	case OPS_F16: {
		const uint16_t *s = src;
		for (; i + 8 <= n; i += 8) {
			__m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
			_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
		}
		for (; i < n; i++)
			dst[i] = ops_f16_to_f32(s[i]);
		return;
	}
	case OPS_BF16: {
		const uint16_t *s = src;
		for (; i + 8 <= n; i += 8) {
			__m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
			__m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
			_mm256_storeu_ps(dst + i, _mm256_castsi256_ps(w));
		}
		for (; i < n; i++)
			dst[i] = ops_bf16_to_f32(s[i]);
		return;
	}
	case OPS_S8: {
		const int8_t *s = src;
		for (; i < n; i++)
			dst[i] = (float)s[i];
		return;
	}
	case OPS_U8: {
		const uint8_t *s = src;
		for (; i < n; i++)
			dst[i] = (float)s[i];
		return;
	}
	case OPS_S32: {
		const int32_t *s = src;
		for (; i < n; i++)
			dst[i] = (float)s[i];
		return;
	}
	default:
		return;
	}
}

/* Integer targets round to nearest (even) and saturate; NaN becomes 0. */
static long sat_round(float f, long lo, long hi)
{
	if (f != f)
		return 0;
	if (f <= (float)lo)
		return lo;
	if (f >= (float)hi)
		return hi;
	return lrintf(f);
}

void ops_from_f32(enum ops_dtype t, const float *src, void *dst, size_t n)
{
	size_t i = 0;

	switch (t) {
	case OPS_F32:
		memmove(dst, src, n * sizeof(float));
		return;
	case OPS_F16: {
		uint16_t *d = dst;
		for (; i + 8 <= n; i += 8) {
			__m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), 0);
			_mm_storeu_si128((__m128i *)(void *)(d + i), h);
		}
		for (; i < n; i++)
			d[i] = ops_f32_to_f16(src[i]);
		return;
	}
	case OPS_BF16: {
		uint16_t *d = dst;
		for (; i + 8 <= n; i += 8)
			_mm_storeu_si128((__m128i *)(void *)(d + i),
					 bf16_pack8(_mm256_loadu_ps(src + i)));
		for (; i < n; i++)
			d[i] = ops_f32_to_bf16(src[i]);
		return;
	}
	case OPS_S8: {
		int8_t *d = dst;
		for (; i < n; i++)
			d[i] = (int8_t)sat_round(src[i], -128, 127);
		return;
	}
	case OPS_U8: {
		uint8_t *d = dst;
		for (; i < n; i++)
			d[i] = (uint8_t)sat_round(src[i], 0, 255);
		return;
	}
	case OPS_S32: {
		int32_t *d = dst;
		for (; i < n; i++)
			d[i] = (int32_t)sat_round(src[i], -2147483647L - 1, 2147483647L);
		return;
	}
	default:
		return;
	}
}

/* ---- spaces ---------------------------------------------------------------- */

const char *ops_space_name(enum ops_space s)
{
	static const char *const names[OPS_NSPACES] = { "GLOBAL", "SHARED", "LOCAL" };

	return (unsigned)s < OPS_NSPACES ? names[s] : "?";
}

/* ---- activations ------------------------------------------------------------ */

static const char *const act_names[OPS_NACTS] = {
	"none", "relu", "gelu", "gelu-tanh", "silu", "sigmoid", "tanh"
};

const char *ops_act_name(enum ops_act a)
{
	return (unsigned)a < OPS_NACTS ? act_names[a] : "?";
}

int ops_act_parse(const char *s, enum ops_act *out)
{
	if (!s)
		return OPR_EINPUT;
	if (strcmp(s, "gelu-erf") == 0) {
		*out = OPS_ACT_GELU_ERF;
		return 0;
	}
	for (int i = 0; i < OPS_NACTS; i++)
		if (strcmp(s, act_names[i]) == 0) {
			*out = (enum ops_act)i;
			return 0;
		}
	return OPR_EINPUT;
}

/* fp64 references:
 *   relu(x)      = max(x, 0)
 *   gelu(x)      = 0.5 x (1 + erf(x / sqrt 2))                  (Hendrycks & Gimpel)
 *   gelu-tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *   silu(x)      = x sigmoid(x),  sigmoid(x) = 1 / (1 + exp(-x)) */
double ops_act_ref(enum ops_act a, double x)
{
	switch (a) {
	case OPS_ACT_RELU:
		return x > 0.0 ? x : (x != x ? x : 0.0);
	case OPS_ACT_GELU_ERF:
		return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
	case OPS_ACT_GELU_TANH: {
		const double k = sqrt(2.0 / 3.14159265358979323846);
		return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
	}
	case OPS_ACT_SILU:
		return x / (1.0 + exp(-x));
	case OPS_ACT_SIGMOID:
		return 1.0 / (1.0 + exp(-x));
	case OPS_ACT_TANH:
		return tanh(x);
	case OPS_ACT_NONE:
	default:
		return x;
	}
}

/* ---- groups ---------------------------------------------------------------- */

static const char *const group_names[OPS_NGROUPS] = {
	"activation", "conv2d", "conv2d+bias+activation", "qgemm",
	"qgemm+dequant+bias+activation", "permute", "permute+activation"
};
/* Unfused, every op is its own launch: conv2d+bias+activation is a conv
 * launch, a bias launch and an activation launch. */
static const int group_nops[OPS_NGROUPS] = { 1, 1, 3, 1, 4, 1, 2 };

const char *ops_group_name(enum ops_group g)
{
	return (unsigned)g < OPS_NGROUPS ? group_names[g] : "?";
}

int ops_group_parse(const char *s, enum ops_group *out)
{
	if (!s)
		return OPR_EINPUT;
	for (int i = 0; i < OPS_NGROUPS; i++)
		if (strcmp(s, group_names[i]) == 0) {
			*out = (enum ops_group)i;
			return 0;
		}
	return OPR_EINPUT;
}

int ops_group_nops(enum ops_group g)
{
	return (unsigned)g < OPS_NGROUPS ? group_nops[g] : 0;
}
