/* ops/kern_act.h: the activation math of every host path, written once over
 * a lane type so that the portable, AVX2 and AVX-512 paths compute the same
 * operations in the same order and agree bit for bit. Included by
 * ops/kern_<isa>.c after it defines, for its vector type VF (and integer VI,
 * mask VM):
 *   V1(c)            broadcast a float constant
 *   VADD VSUB VMUL VDIV VMIN VMAX   (VMIN(a, b), VMAX(a, b) return b when
 *                    either is NaN, as minps/maxps do)
 *   VFMA(a, b, c)    a*b + c, one rounding;  VFNMA(a, b, c)  c - a*b
 *   VROUND(a)        to the nearest integer, ties to even
 *   VABS(a) VSIGN(a) |a| and a's sign bit;  VOR(a, b) bitwise or
 *   VCVTI(a)         integral float to int32 (NaN: INT32_MIN)
 *   VPOW2(n)         2^n as a float for integer n in [-126, 127], i.e. the
 *                    bits (n + 127) << 23
 *   VHALF(n) VISUB(a, b)  n >> 1 (arithmetic), a - b on int32
 *   VEQ VGE VLT      comparisons (ordered, quiet) giving a mask
 *   VSEL(m, a, b)    b where m, else a
 * Never included outside ops/. */
#ifndef OPS_KERN_ACT_H
#define OPS_KERN_ACT_H

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Elements ahead of the one being mapped that the exp-family maps prefetch
 * (1 KiB of fp32): one core's out-of-order window holds too few of these
 * long vectors to keep DRAM busy, and a 64 MiB map ran compute and memory
 * one after the other (make bench, gelu-tanh 64 MiB: AVX2 14.3-19.3 ms
 * without, 11.0-11.4 with; AVX-512 9.9 against 8.9). Prefetches past the
 * end of x never fault. */
#define ACT_PF 256

/* exp(x) = 2^n * exp(r), n = round(x / ln2), r = x - n*ln2 with ln2 split in
 * two (Cody & Waite, "Software Manual for the Elementary Functions", 1980) so
 * that n*LN2_HI is exact. exp(r) is 1 + r + c2 r^2 + ... + c6 r^6, c2..c6
 * the minimax fit of exp's relative error on |r| <= ln2/2 with 1 + r held
 * exact (Lawson's iteration on 4001 points, then rounded to fp32): 3.7e-9
 * relative in exact arithmetic, where the Taylor series to r^7 that it
 * replaced had 7.0e-9 with one FMA more (one of the two operations taken off
 * a gelu-tanh vector, v_gelu_tanh, where the AVX2 path is bound by its two
 * FMA ports: 64 MiB in 8.90 against 10.05 ms). The result is within ~2 ulp
 * of exp(x). x is clamped to [-104, 89]: below, the
 * result underflows to 0; above, it overflows to inf (as expf does). 2^n is
 * applied as 2^(n/2) * 2^(n - n/2) so that n in [-150, 128] keeps both
 * exponent fields in range (subnormal results come out right). Estrin's
 * scheme (pairs, then pairs of pairs) keeps the chain three FMAs deep
 * instead of Horner's six: a SiLU vector took 12 cycles with Horner. */
ALWAYS_INLINE VF v_exp(VF x)
{
	/* max(lo, x) and min(hi, .) return x when it is NaN */
	x = VMIN(V1(89.0f), VMAX(V1(-104.0f), x));
	VF fn = VROUND(VMUL(x, V1(1.44269504088896341f)));
	VF r = VFNMA(fn, V1(0.693359375f), x);
	r = VFNMA(fn, V1(-2.12194440e-4f), r);
	VF r2 = VMUL(r, r);
	VF r4 = VMUL(r2, r2);
	VF a01 = VADD(r, V1(1.0f));
	VF a23 = VFMA(r, V1(1.666652113e-1f), V1(4.999999404e-1f));
	VF a45 = VFMA(r, V1(8.368727751e-3f), V1(4.166838899e-2f));
	VF a03 = VFMA(a23, r2, a01);
	VF a46 = VFMA(r2, V1(1.381458715e-3f), a45);
	VF p = VFMA(a46, r4, a03);
	VI n = VCVTI(fn);
	VI n1 = VHALF(n);
	VI n2 = VISUB(n, n1);
	return VMUL(VMUL(p, VPOW2(n1)), VPOW2(n2));
}

ALWAYS_INLINE VF v_relu(VF x)
{
	/* max returns its second operand when one is NaN: NaN propagates */
	return VMAX(V1(0.0f), x);
}

/* x * g(x) with g -> 0 as x -> -inf would give -inf * 0 = NaN at -inf: the
 * limit there is -0. */
ALWAYS_INLINE VF fix_neg_inf(VF x, VF r)
{
	return VSEL(VEQ(x, V1(-INFINITY)), r, V1(-0.0f));
}

/* sigmoid(x) = 1 / (1 + exp(-x)): for large |x| either term dominates, so the
 * relative error stays that of exp (no cancellation). */
ALWAYS_INLINE VF v_sigmoid(VF x)
{
	VF e = v_exp(VSUB(V1(0.0f), x));
	return VDIV(V1(1.0f), VADD(V1(1.0f), e));
}

/* silu(x) = x * sigmoid(x) = x / (1 + exp(-x)) */
ALWAYS_INLINE VF v_silu(VF x)
{
	VF e = v_exp(VSUB(V1(0.0f), x));
	return fix_neg_inf(x, VDIV(x, VADD(V1(1.0f), e)));
}

/* gelu-tanh(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
 * (Hendrycks & Gimpel 2016). Since 0.5 (1 + tanh(u)) = sigmoid(2u), this is
 * x / (1 + exp(-2u)), which keeps relative accuracy for negative x where
 * 1 + tanh(u) would cancel. -2u is formed as x (b x^2 + a), the constants
 * folded: three operations where x^3, the FMA and the scaling took four. */
ALWAYS_INLINE VF v_gelu_tanh(VF x)
{
	VF t = VFMA(VMUL(x, x), V1(-2.0 * 0.7978845608028654 * 0.044715),
		    V1(-2.0 * 0.7978845608028654));
	VF e = v_exp(VMUL(x, t));
	return fix_neg_inf(x, VDIV(x, VADD(V1(1.0f), e)));
}

/* tanh: for |x| < 0.5 the odd Taylor series to x^17 (the next term is below
 * 3e-9 relative there); otherwise tanh|x| = (1 - e) / (1 + e), e = exp(-2|x|)
 * <= 0.37, so 1 - e loses at most 1.5 bits and e never overflows. */
ALWAYS_INLINE VF v_tanh(VF x)
{
	VF ax = VABS(x);
	VF z = VMUL(x, x);
	VF p = V1((float)(6404582.0 / 10854718875.0));
	p = VFMA(p, z, V1((float)(-929569.0 / 638512875.0)));
	p = VFMA(p, z, V1((float)(21844.0 / 6081075.0)));
	p = VFMA(p, z, V1((float)(-1382.0 / 155925.0)));
	p = VFMA(p, z, V1((float)(62.0 / 2835.0)));
	p = VFMA(p, z, V1((float)(-17.0 / 315.0)));
	p = VFMA(p, z, V1((float)(2.0 / 15.0)));
	p = VFMA(p, z, V1((float)(-1.0 / 3.0)));
	VF small = VFMA(VMUL(p, z), x, x);
	VF e = v_exp(VMUL(ax, V1(-2.0f)));
	VF big = VDIV(VSUB(V1(1.0f), e), VADD(V1(1.0f), e));
	big = VOR(big, VSIGN(x));
	/* NaN compares false: it takes the series branch, which propagates it */
	return VSEL(VGE(ax, V1(0.5f)), small, big);
}

/* gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2).
 * erfc(z), z >= 0, by the Chebyshev fit of Numerical Recipes in C (2nd ed.,
 * section 6.2, erfcc): t = 1 / (1 + z/2),
 *   erfc(z) = t exp(-z^2 - 1.26551223 + t (1.00002368 + t (0.37409196 +
 *             t (0.09678418 + t (-0.18628806 + t (0.27886807 + t (-1.13520398 +
 *             t (1.48851587 + t (-0.82215223 + t 0.17087277)))))))))
 * with a fractional error below 1.2e-7 for every z >= 0. Using erfc directly
 * for x < 0 and 2 - erfc for x >= 0 keeps the result relatively accurate on
 * both sides (1 + erf(z) would cancel for negative z). */
ALWAYS_INLINE VF v_gelu_erf(VF x)
{
	VF z = VMUL(VABS(x), V1(0.70710678118654752f));
	VF t = VDIV(V1(1.0f), VFMA(z, V1(0.5f), V1(1.0f)));
	VF p = V1(0.17087277f);
	p = VFMA(p, t, V1(-0.82215223f));
	p = VFMA(p, t, V1(1.48851587f));
	p = VFMA(p, t, V1(-1.13520398f));
	p = VFMA(p, t, V1(0.27886807f));
	p = VFMA(p, t, V1(-0.18628806f));
	p = VFMA(p, t, V1(0.09678418f));
	p = VFMA(p, t, V1(0.37409196f));
	p = VFMA(p, t, V1(1.00002368f));
	p = VFMA(p, t, V1(-1.26551223f));
	p = VFNMA(z, z, p);
	VF erfc = VMUL(t, v_exp(p));
	VF pos = VSUB(V1(2.0f), erfc);
	VF f = VSEL(VLT(x, V1(0.0f)), pos, erfc);
	return fix_neg_inf(x, VMUL(VMUL(V1(0.5f), x), f));
}

#endif
