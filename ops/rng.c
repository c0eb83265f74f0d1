/* ops/rng.c: the counter-based input generator. Element i of a tensor is
 * mix(key + (i + 1) * golden), the SplitMix64 output for position i, so
 * every element is a pure function of (key, i): fills are identical whatever
 * the order, the chunking or the thread count. */
#include "ops.h"

#include <math.h>

#define GOLDEN 0x9e3779b97f4a7c15ull

/* SplitMix64 finaliser (Steele, Lea & Flood, "Fast splittable pseudorandom
 * number generators", OOPSLA 2014; constants of Vigna's splitmix64.c). */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* FNV-1a 64 over a string, continuing from h. */
static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t ops_rng_key(uint64_t seed, const char *block, const char *tensor)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV offset basis */

	h = fnv1a(h, block);
	/* a separator byte no name contains, so ("ab","c") != ("a","bc") */
	h ^= 0xffu;
	h *= 0x100000001b3ull;
	h = fnv1a(h, tensor);
	return mix64(h ^ mix64(seed + GOLDEN));
}

static uint64_t rng_at(uint64_t key, uint64_t i)
{
	return mix64(key + (i + 1) * GOLDEN);
}

void ops_rng_fill_f32(uint64_t key, float *dst, size_t n, float lo, float hi)
{
	/* the value that replaces an exact zero: one step of the range's 24-bit
	 * grid (at least the smallest subnormal), on the side of zero that stays
	 * inside [lo, hi) when the range allows */
	const float tiny = nextafterf(0.0f, 1.0f);
	float eps = (float)(((double)hi - (double)lo) * 0x1p-24);
	if (!(eps >= tiny))
		eps = tiny;
	if (!(eps < hi))
		eps = -eps;
	if (eps < lo)
		eps = hi > 0.0f ? tiny : -tiny;

	for (size_t i = 0; i < n; i++) {
		/* 24 random bits: u uniform on the fp32 grid of [0, 1) */
		double u = (double)(rng_at(key, i) >> 40) * 0x1p-24;
		float v = (float)((double)lo + ((double)hi - (double)lo) * u);
		if (v >= hi && hi > lo)
			v = nextafterf(hi, lo);
		if (v == 0.0f)
			v = eps;
		dst[i] = v;
	}
}

/* lo + floor(r * (hi - lo + 1) / 2^32): multiply-shift range reduction of
 * 32 random bits (Lemire), bias below 2^-24 for these tiny ranges. */
static int rand_int(uint64_t key, size_t i, int lo, int hi)
{
	if (hi <= lo)
		return lo;
	uint64_t range = (uint64_t)((int64_t)hi - lo + 1);
	uint64_t r = rng_at(key, i) >> 32;
	return (int)((int64_t)lo + (int64_t)((r * range) >> 32));
}

void ops_rng_fill_i8(uint64_t key, int8_t *dst, size_t n, int lo, int hi)
{
	if (lo < -128)
		lo = -128;
	if (hi > 127)
		hi = 127;
	for (size_t i = 0; i < n; i++)
		dst[i] = (int8_t)rand_int(key, i, lo, hi);
}

void ops_rng_fill_u8(uint64_t key, uint8_t *dst, size_t n, int lo, int hi)
{
	if (lo < 0)
		lo = 0;
	if (hi > 255)
		hi = 255;
	for (size_t i = 0; i < n; i++)
		dst[i] = (uint8_t)rand_int(key, i, lo, hi);
}

uint64_t ops_splitmix64(uint64_t *state)
{
	return mix64(*state += GOLDEN);
}

void ops_shuffle_order(int *order, int n, uint64_t *state)
{
	for (int k = 0; k < n; k++)
		order[k] = k;
	for (int k = n - 1; k > 0; k--) {
		int j = (int)(ops_splitmix64(state) % (uint64_t)(k + 1)), tmp = order[k];
		order[k] = order[j];
		order[j] = tmp;
	}
}

void ops_xoshiro_seed(struct ops_xoshiro *g, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		g->s[i] = ops_splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t ops_xoshiro_next(struct ops_xoshiro *g)
{
	uint64_t *s = g->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}
