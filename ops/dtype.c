/* ops/dtype.c: names and sizes of dtypes, spaces, activations and groups;
 * fp16 and bf16 conversions (round to nearest even): the portable scalar
 * ones and the entry to the vector ones of the chosen path; the fp64
 * reference activations. */
#include "isa_int.h"

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

/* The same results as F16C's vcvtps2ph (imm 0) and vcvtph2ps, bit for bit:
 * round to nearest even, subnormals kept, overflow to inf, a NaN quieted
 * with the top bits of its payload. */
uint16_t ops_f32_to_f16(float f)
{
	uint32_t u, a, sign, h, rem;

	memcpy(&u, &f, sizeof u);
	sign = (u >> 16) & 0x8000u;
	a = u & 0x7fffffffu;
	if (a > 0x7f800000u)
		return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
	if (a >= 0x477ff000u) /* 65520 and above round to inf */
		return (uint16_t)(sign | 0x7c00u);
	if (a < 0x38800000u) { /* below 2^-14: a subnormal half (or zero) */
		uint32_t e = a >> 23, mant = (a & 0x7fffffu) | 0x800000u, shift, half;

		if (a <= 0x33000000u) /* at most 2^-25: the tie goes to even 0 */
			return (uint16_t)sign;
		shift = 126 - e; /* 14..24 */
		h = mant >> shift;
		rem = mant & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1u)))
			h++;
		return (uint16_t)(sign | h);
	}
	h = (a - 0x38000000u) >> 13; /* exponent rebiased from 127 to 15 */
	rem = a & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
		h++;
	return (uint16_t)(sign | h);
}

float ops_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	uint32_t u;
	float f;

	if (e == 0x1f)
		u = sign | 0x7f800000u | ((m ? m | 0x200u : 0) << 13);
	else if (e == 0 && m == 0)
		u = sign;
	else if (e == 0) { /* subnormal: m * 2^-24, normalised */
		e = 113;
		while (!(m & 0x400u)) {
			m <<= 1;
			e--;
		}
		u = sign | (e << 23) | ((m & 0x3ffu) << 13);
	} else
		u = sign | ((e + 112) << 23) | (m << 13);
	memcpy(&f, &u, sizeof f);
	return f;
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

/* ---- vector conversions: the chosen path's for fp16 and bf16 ---------------- */

void ops_to_f32(enum ops_dtype t, const void *src, float *dst, size_t n)
{
	size_t i = 0;

	switch (t) {
	case OPS_F32:
		memmove(dst, src, n * sizeof(float));
		return;
	case OPS_F16:
	case OPS_BF16:
		ops_kern->half_to_f32(t, src, dst, n);
		return;
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
	case OPS_F16:
	case OPS_BF16:
		ops_kern->f32_to_half(t, src, dst, n);
		return;
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
