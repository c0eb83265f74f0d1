/* ops/qgemm.c: the INT8 quantised GEMM (small M/N, large K) and the fused
 * qgemm+dequant+bias+activation group: exact integer accumulation at any K,
 * split-K over cores, dequantise to fp32 or requantise to s8.
 *
 * Data: A [m,k] u8/s8 with zero point a_zp; B stored [n,k] s8 (each output
 * channel's K vector contiguous, so a K tile of B is n_tile contiguous runs
 * and large K streams); scales fp32 [n] or [1]; y [m,n] fp32 or s8.
 *   acc[i][j] = sum_k (a[i][k] - a_zp) * b[j][k]                   (exact)
 *   fp32: y = act(float(a_scale * b_scale[j] * acc) + bias[j])
 *   s8:   y = sat_s8(round_half_even(a_scale*b_scale[j]*acc / out_scale) + out_zp)
 * (the plain qgemm group has no bias and no activation; a requantised output
 * has the requant epilogue only).
 *
 * Device mapping: one launch over NT x parts tiles (tile = jt*parts + p, so
 * the parts of an n tile land on distinct cores). A part streams its K tiles:
 * DMA A [m,kk] and B [tn,kk] GLOBAL->SHARED (split at max_last_dim), the
 * kernel sums each K tile in int32 (exact: see OPS_QGEMM_MAX_TILE_KK) and the
 * part widens to int64 across tiles and writes its partial accumulators into
 * its SHARED. The part-0 core then pulls the other partials SHARED->SHARED
 * (one [m,tn] descriptor each), adds them, and runs the epilogue (fused) or
 * writes the accumulators to GLOBAL (unfused: then dequant, bias and
 * activation launches, each reading and writing GLOBAL, the activation one
 * even for none, so the unfused group has its 4 launches; an s8 output has
 * one requant launch instead). The plain qgemm group is one op with its
 * dequant/requant epilogue: one launch whatever plan.fused says. Units:
 * bytes, elements; the host runs the tiles one after the other.
 * Accumulators kept between phases (partials, the unfused GLOBAL copy) are
 * int32 when the exact result cannot overflow, else int64
 * (ops_qgemm_acc_bytes). Element ops counted: one per element per stage
 * (reduction add, dequant or requant, bias, activation). */
#include "device_int.h"
#include "isa_int.h"
#include "qgemm_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* ---- the exact kernel (the chosen path of ops/kern_<isa>.c) ------------------- */

void ops_qgemm_kernel(enum ops_dtype at, const void *a, const int8_t *b,
		      int64_t m, int64_t tn, int64_t kk, int32_t *c, int16_t *a16)
{
	ops_kern->qgemm(at, a, kk, b, kk, m, tn, kk, c, NULL, a16);
}

void ops_qgemm_kernel_ld(enum ops_dtype at, const void *a, int64_t lda, const int8_t *b,
			 int64_t ldb, int64_t m, int64_t tn, int64_t kk, int32_t *c, int32_t *cs,
			 int16_t *a16)
{
	ops_kern->qgemm(at, a, lda, b, ldb, m, tn, kk, c, cs, a16);
}

void ops_qgemm_colsum(const int8_t *b, int64_t tn, int64_t kk, int32_t *cs)
{
	ops_kern->qgemm_colsum(b, kk, tn, kk, cs);
}

void ops_qgemm_colsum_ld(const int8_t *b, int64_t ldb, int64_t tn, int64_t kk, int32_t *cs)
{
	ops_kern->qgemm_colsum(b, ldb, tn, kk, cs);
}

int64_t ops_qgemm_pack_chunk(void)
{
	return ops_kern->qgemm_pack_chunk && ops_kern->qgemm_packed ? ops_kern->qgemm_pack_chunk() : 0;
}

uint64_t ops_qgemm_packed_bytes(int64_t n, int64_t k, int64_t kc)
{
	return (uint64_t)n * (uint64_t)((k + kc - 1) / kc * kc);
}

/* One K chunk of an n tile's group of G columns (qgemm_int.h): quad t's
 * 4G bytes at d + 4G t, column i's 4 bytes at + 4i, zero past k. */
static void qg_pack_group(const int8_t *b, int64_t k, int64_t G, int64_t c0, int64_t kc,
			  int8_t *d)
{
	/* whole 64-byte runs of K first, 16 quads of every column through an
	 * L1 buffer, so that reads and writes both go in order (a quad at a
	 * time, the writes 4G bytes apart, took 2.4x as long on 64 MiB) */
	int64_t full = (k - c0 < kc ? k - c0 : kc) / 64 * 64, q = 0;
	int32_t run[32][16];

	for (; q < full; q += 64) {
		for (int64_t i = 0; i < G; i++)
			memcpy(run[i], b + i * k + c0 + q, 64);
		for (int64_t t = 0; t < 16; t++)
			for (int64_t i = 0; i < G; i++)
				memcpy(d + (q + 4 * t) * G + 4 * i, &run[i][t], 4);
	}
	for (int64_t i = 0; i < G; i++)
		for (int64_t p = q; p < kc; p += 4) {
			int8_t *o = d + p * G + 4 * i;
			int64_t nb = k - c0 - p >= 4 ? 4 : k - c0 - p > 0 ? k - c0 - p : 0;
			if (nb)
				memcpy(o, b + i * k + c0 + p, (size_t)nb);
			memset(o + nb, 0, (size_t)(4 - nb));
		}
}

void ops_qgemm_pack_b(const int8_t *b, int64_t n, int64_t k, int64_t tn, int64_t kc,
		      int8_t *bp)
{
	const int64_t kp = (k + kc - 1) / kc * kc;

	for (int64_t j0 = 0; j0 < n; j0 += tn) {
		int64_t w = n - j0 < tn ? n - j0 : tn;
		for (int64_t c0 = 0; c0 < kp; c0 += kc)
			for (int64_t g = 0; g < w; g += 32)
				qg_pack_group(b + (j0 + g) * k, k, w - g < 32 ? w - g : 32, c0, kc,
					      bp + j0 * kp + c0 * w + g * kc);
	}
}

void ops_qgemm_kernel_packed(enum ops_dtype at, const void *a, int64_t lda, const int8_t *bt,
			     int64_t w, int64_t k0, int64_t m, int64_t kk, int32_t *c,
			     int32_t *cs)
{
	ops_kern->qgemm_packed(at, a, lda, bt, w, k0, m, kk, c, cs);
}

void ops_qgemm_ref_acc(const struct ops_workload *w, const void *a, const int8_t *b,
		       int64_t *acc)
{
	int64_t m = w->gemm.m, n = w->gemm.n, k = w->gemm.k;
	int64_t zp = w->quant.a_zero_point;

	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			const int8_t *bj = b + j * k;
			int64_t s = 0;
			if (w->quant.a == OPS_U8) {
				const uint8_t *ai = (const uint8_t *)a + i * k;
				for (int64_t q = 0; q < k; q++)
					s += ((int64_t)ai[q] - zp) * bj[q];
			} else {
				const int8_t *ai = (const int8_t *)a + i * k;
				for (int64_t q = 0; q < k; q++)
					s += ((int64_t)ai[q] - zp) * bj[q];
			}
			acc[i * n + j] = s;
		}
}

/* ---- shapes, quantisation parameters, plans -------------------------------- */

static const char *const qg_params[] = {"tile_n", "tile_kk", "split_k", NULL};

static int qg_is_fused_group(const struct ops_workload *w)
{
	return w->group == OPS_G_QGEMM_DQ_BIAS_ACT;
}

/* The fused group with fp32 output has bias and activation. */
static int qg_has_bias(const struct ops_workload *w)
{
	return qg_is_fused_group(w) && w->quant.out == OPS_F32;
}

static int64_t qg_amax(const struct ops_workload *w)
{
	int64_t lo = w->quant.a == OPS_U8 ? 0 : -128, hi = w->quant.a == OPS_U8 ? 255 : 127;
	int64_t zp = w->quant.a_zero_point;
	return hi - zp > zp - lo ? hi - zp : zp - lo;
}

int ops_qgemm_acc_bytes(const struct ops_workload *w)
{
	return w->gemm.k * qg_amax(w) * 128 <= INT32_MAX ? 4 : 8;
}

static double qg_a_scale(const struct ops_workload *w)
{
	return w->quant.a_scale > 0 ? (double)w->quant.a_scale : 1.0 / 64;
}

/* Default out_scale (0 in the workload): the spread of the random-input
 * output, |E acc| + 3 sd(acc), mapped to 127. With a uniform on [lo,hi] and
 * b uniform on [-128,127] (mean -0.5, E b^2 = 5461.5), independent:
 *   E acc = k (E a - zp)(-0.5),  var acc = k (E (a-zp)^2 E b^2 - (E a - zp)^2 0.25)
 * times a_scale and the mean of the b_scale fill, 0.0055. */
static double qg_out_scale(const struct ops_workload *w)
{
	double lo, hi, ma, va, ea2, mean, var, k = (double)w->gemm.k;

	if (w->quant.out_scale > 0)
		return w->quant.out_scale;
	lo = w->quant.a == OPS_U8 ? 0 : -128;
	hi = w->quant.a == OPS_U8 ? 255 : 127;
	ma = (lo + hi) / 2 - w->quant.a_zero_point;
	va = ((hi - lo + 1) * (hi - lo + 1) - 1) / 12;
	ea2 = va + ma * ma;
	mean = k * ma * -0.5;
	var = k * (ea2 * 5461.5 - ma * ma * 0.25);
	return qg_a_scale(w) * 0.0055 * (fabs(mean) + 3 * sqrt(var > 0 ? var : 0)) / 127;
}

static int qg_check(const struct ops_workload *w, struct opr_error *err)
{
	const struct ops_quant *qu = &w->quant;
	const struct ops_gemm_shape *g = &w->gemm;

	if (w->group != OPS_G_QGEMM && w->group != OPS_G_QGEMM_DQ_BIAS_ACT)
		return opr_error_set(err, OPR_EINPUT, "group '%s' is not a qgemm group",
				     ops_group_name(w->group));
	if (w->dtype != OPS_S8 && w->dtype != OPS_U8)
		return opr_error_set(err, OPR_EINPUT, "dtype '%s' is not supported by qgemm (int8)",
				     ops_dtype_name(w->dtype));
	if (g->m < 1 || g->m > OPS_QGEMM_MAX_MN)
		return opr_error_set(err, OPR_EINPUT, "m %lld is outside 1..%d",
				     (long long)g->m, OPS_QGEMM_MAX_MN);
	if (g->n < 1 || g->n > OPS_QGEMM_MAX_MN)
		return opr_error_set(err, OPR_EINPUT, "n %lld is outside 1..%d",
				     (long long)g->n, OPS_QGEMM_MAX_MN);
	if (g->k < 1)
		return opr_error_set(err, OPR_EINPUT, "k %lld must be positive", (long long)g->k);
	if (g->k > OPS_QGEMM_MAX_K)
		return opr_error_set(err, OPR_EINPUT, "k %lld exceeds the supported maximum %d",
				     (long long)g->k, OPS_QGEMM_MAX_K);
	if (qu->a != OPS_U8 && qu->a != OPS_S8)
		return opr_error_set(err, OPR_EINPUT, "a dtype '%s' is not supported (u8 or s8)",
				     ops_dtype_name(qu->a));
	if (qu->a == OPS_U8 && (qu->a_zero_point < 0 || qu->a_zero_point > 255))
		return opr_error_set(err, OPR_EINPUT, "a_zero_point %d is outside the u8 range 0..255",
				     (int)qu->a_zero_point);
	if (qu->a == OPS_S8 && (qu->a_zero_point < -128 || qu->a_zero_point > 127))
		return opr_error_set(err, OPR_EINPUT,
				     "a_zero_point %d is outside the s8 range -128..127",
				     (int)qu->a_zero_point);
	if (!(qu->a_scale >= 0) || !isfinite(qu->a_scale))
		return opr_error_set(err, OPR_EINPUT, "a_scale %g must be positive", qu->a_scale);
	if (qu->out != OPS_F32 && qu->out != OPS_S8)
		return opr_error_set(err, OPR_EINPUT, "out dtype '%s' is not supported (fp32 or s8)",
				     ops_dtype_name(qu->out));
	if (qu->out == OPS_S8) {
		if (!(qu->out_scale >= 0) || !isfinite(qu->out_scale))
			return opr_error_set(err, OPR_EINPUT, "out_scale %g must be positive",
					     qu->out_scale);
		if (qu->out_zero_point < -128 || qu->out_zero_point > 127)
			return opr_error_set(err, OPR_EINPUT,
					     "out_zero_point %d is outside the s8 range -128..127",
					     (int)qu->out_zero_point);
	}
	if ((int)w->act < 0 || w->act >= OPS_NACTS)
		return opr_error_set(err, OPR_EINPUT, "activation %d is unknown", (int)w->act);
	if (qg_is_fused_group(w) && qu->out == OPS_S8 && w->act != OPS_ACT_NONE)
		return opr_error_set(err, OPR_EINPUT,
				     "activation '%s' needs fp32 output (requantised qgemm has none)",
				     ops_act_name(w->act));
	return 0;
}

int ops_qgemm_tiles_get(const struct ops_workload *w, const struct ops_plan *p,
			int cores, struct ops_qgemm_tiles *t, struct opr_error *err)
{
	int64_t n = w->gemm.n, k = w->gemm.k;

	for (int i = 0; i < 3; i++)
		if (p->p[i] < 0)
			return opr_error_set(err, OPR_EINPUT, "'%s' %lld must not be negative",
					     qg_params[i], (long long)p->p[i]);
	if (p->split_k < 0)
		return opr_error_set(err, OPR_EINPUT, "'split_k' %d must not be negative", p->split_k);
	if (p->p[1] > OPS_QGEMM_MAX_TILE_KK)
		return opr_error_set(err, OPR_EINPUT,
				     "'tile_kk' %lld exceeds the exact int32 bound %d",
				     (long long)p->p[1], OPS_QGEMM_MAX_TILE_KK);
	t->tn = p->p[0] > 0 ? p->p[0] : 64;
	if (t->tn > n)
		t->tn = n;
	if (p->p[1] > 0) {
		t->kk = p->p[1];
	} else {
		/* default: double-buffered A and B tiles within 192 KiB of SHARED */
		t->kk = 16;
		while (2 * t->kk <= OPS_QGEMM_MAX_TILE_KK &&
		       2 * (w->gemm.m + t->tn) * (2 * t->kk) <= 192 * 1024)
			t->kk *= 2;
	}
	if (t->kk > k)
		t->kk = k;
	t->split = p->p[2] > 0 ? p->p[2] : p->split_k > 0 ? p->split_k : 1;
	t->ntn = (n + t->tn - 1) / t->tn;
	t->ntk = (k + t->kk - 1) / t->kk;
	t->parts = t->split;
	if (t->parts > cores)
		t->parts = cores > 0 ? cores : 1;
	if (t->parts > t->ntk)
		t->parts = t->ntk;
	return 0;
}

/* ---- closed forms ------------------------------------------------------------ */

uint64_t ops_qgemm_global_bytes(const struct ops_workload *w, const struct ops_plan *plan)
{
	struct ops_qgemm_tiles t;
	uint64_t m = (uint64_t)w->gemm.m, n = (uint64_t)w->gemm.n, k = (uint64_t)w->gemm.k;
	uint64_t accb, outb, scb, g;

	if (qg_check(w, NULL) || ops_qgemm_tiles_get(w, plan, OPS_MAX_CORES, &t, NULL))
		return 0;
	accb = (uint64_t)ops_qgemm_acc_bytes(w);
	outb = w->quant.out == OPS_F32 ? 4 : 1;
	scb = w->quant.b_per_channel ? 4 * n : 4 * (uint64_t)t.ntn;
	g = (uint64_t)t.ntn * m * k + n * k;
	if (!qg_is_fused_group(w) || plan->fused) {
		g += scb + m * n * outb;
		if (qg_has_bias(w))
			g += 4 * n;
	} else if (w->quant.out == OPS_F32) {
		g += m * n * accb;
		g += m * n * accb + scb + 4 * m * n;
		g += 4 * m * n + 4 * n + 4 * m * n;
		g += 8 * m * n;
	} else {
		g += m * n * accb;
		g += m * n * accb + scb + m * n;
	}
	return g;
}

static uint64_t qg_ceil(int64_t x, int64_t l)
{
	return (uint64_t)((x + l - 1) / l);
}

int ops_qgemm_transfers(const struct ops_envelope *env, const struct ops_workload *w,
			const struct ops_plan *plan, uint64_t *transfers,
			uint64_t *splits, struct opr_error *err)
{
	struct ops_qgemm_tiles t;
	int64_t l = env->dma_max_last_dim, widths[2], counts[2];
	uint64_t tr = 0, sp = 0, kt;
	int rc;

	if ((rc = qg_check(w, err)) || (rc = ops_qgemm_tiles_get(w, plan, env->cores, &t, err)))
		return rc;
	if (l < 1)
		return opr_error_set(err, OPR_EINPUT, "dma max_last_dim %lld must be positive",
				     (long long)l);
	/* K tiles: ntk-1 of kk and one of the remainder, A and B each */
	kt = (uint64_t)(t.ntk - 1) * qg_ceil(t.kk, l) + qg_ceil(w->gemm.k - (t.ntk - 1) * t.kk, l);
	widths[0] = t.tn;
	counts[0] = t.ntn - 1;
	widths[1] = w->gemm.n - (t.ntn - 1) * t.tn;
	counts[1] = 1;
	for (int i = 0; i < 2; i++) {
		uint64_t cw = qg_ceil(widths[i], l);
		uint64_t cs = w->quant.b_per_channel ? cw : 1;
		uint64_t per = 2 * kt, desc = 2 * (uint64_t)(t.ntk);
		per += (uint64_t)(t.parts - 1) * cw;
		desc += (uint64_t)(t.parts - 1);
		if (!qg_is_fused_group(w) || plan->fused) {
			per += cs + cw;
			desc += 2;
			if (qg_has_bias(w)) {
				per += cw;
				desc += 1;
			}
		} else if (w->quant.out == OPS_F32) {
			per += cw + (cw + cs + cw) + 3 * cw + 2 * cw;
			desc += 1 + 3 + 3 + 2;
		} else {
			per += cw + (cw + cs + cw);
			desc += 1 + 3;
		}
		tr += (uint64_t)counts[i] * per;
		sp += (uint64_t)counts[i] * (per - desc);
	}
	*transfers = tr;
	*splits = sp;
	return 0;
}

/* ---- instance state ------------------------------------------------------------ */

/* Host scratch of an instance (not device memory): the kernel's widened A
 * chunk, the int32 tile sums, the column sums, the running int64 sums of a
 * part and the final accumulators kept for quality(). */
struct qg_priv {
	int16_t *a16;
	int32_t *raw;
	int32_t *colsum;
	int64_t *run;
	int64_t *acc;
	int acc_valid;
	/* B packed for the path's kernel (ops_qgemm_pack_b), and the B data,
	 * version, n tile and chunk it came from */
	int8_t *bpack;
	const void *bpack_src;
	uint64_t bpack_ver;
	int64_t bpack_tn, bpack_kc;
};

static void qg_release(struct ops_instance *inst)
{
	struct qg_priv *pv = inst->priv;

	if (!pv)
		return;
	free(pv->a16);
	free(pv->raw);
	free(pv->colsum);
	free(pv->run);
	free(pv->acc);
	free(pv->bpack);
	free(pv);
	inst->priv = NULL;
}

static uint64_t qg_align(uint64_t b)
{
	return (b + 63) / 64 * 64;
}

static uint64_t qg_bytes(const struct ops_workload *w)
{
	uint64_t m = (uint64_t)w->gemm.m, n = (uint64_t)w->gemm.n, k = (uint64_t)w->gemm.k;
	uint64_t b = 0;

	b += qg_align(m * k) + qg_align(n * k);
	b += qg_align(4 * (w->quant.b_per_channel ? n : 1));
	if (qg_has_bias(w))
		b += qg_align(4 * n);
	b += qg_align(m * n * (w->quant.out == OPS_F32 ? 4 : 1));
	/* scratch: a16, raw, colsum, run, acc, and the unfused GLOBAL accumulators */
	b += qg_align(m * OPS_QGEMM_KC * 2) + qg_align(4 * m * n) + qg_align(4 * n);
	b += 3 * qg_align(8 * m * n);
	/* B kept packed (at the largest chunk any path packs with) */
	b += qg_align(ops_qgemm_packed_bytes((int64_t)n, (int64_t)k, 4096));
	return b;
}

static int qg_prepare(struct ops_instance *inst, struct opr_error *err)
{
	const struct ops_workload *w = &inst->work;
	int64_t m = w->gemm.m, n = w->gemm.n, k = w->gemm.k;
	int a_lo = w->quant.a == OPS_U8 ? 0 : -128, a_hi = w->quant.a == OPS_U8 ? 255 : 127;
	struct qg_priv *pv;
	int rc;

	if ((rc = qg_check(w, err)))
		return rc;
	if ((rc = ops_instance_add_tensor(inst, "a", w->quant.a, m * k, 0, a_lo, a_hi, err)) < 0)
		return rc;
	/* symmetric weights (mean 0, as trained weights are): with -128..127 the
	 * -0.5 mean times K ~ 1M dominates every accumulator, every output lands
	 * far below zero and an activation would flatten them all */
	if ((rc = ops_instance_add_tensor(inst, "b", OPS_S8, n * k, 0, -127, 127, err)) < 0)
		return rc;
	if ((rc = ops_instance_add_tensor(inst, "scale_b", OPS_F32, w->quant.b_per_channel ? n : 1,
					  0, 0.001, 0.01, err)) < 0)
		return rc;
	if (qg_has_bias(w) &&
	    (rc = ops_instance_add_tensor(inst, "bias", OPS_F32, n, 0, -1.0, 1.0, err)) < 0)
		return rc;
	if ((rc = ops_instance_add_tensor(inst, "y", w->quant.out, m * n, 1, 0, 0, err)) < 0)
		return rc;
	inst->out_index = rc;
	if (inst->dry)
		return 0;
	pv = calloc(1, sizeof *pv);
	if (!pv)
		return opr_error_set(err, OPR_ENOMEM, "out of memory for 'qgemm' scratch");
	inst->priv = pv;
	pv->a16 = aligned_alloc(64, qg_align((uint64_t)m * OPS_QGEMM_KC * 2));
	pv->raw = malloc((size_t)(m * n) * sizeof *pv->raw);
	pv->colsum = malloc((size_t)n * sizeof *pv->colsum);
	pv->run = malloc((size_t)(m * n) * sizeof *pv->run);
	pv->acc = malloc((size_t)(m * n) * sizeof *pv->acc);
	if (!pv->a16 || !pv->raw || !pv->colsum || !pv->run || !pv->acc) {
		qg_release(inst);
		return opr_error_set(err, OPR_ENOMEM, "out of memory for 'qgemm' scratch");
	}
	return 0;
}

void ops_qgemm_scales(const struct ops_workload *w, double *a_scale, double *out_scale)
{
	*a_scale = qg_a_scale(w);
	*out_scale = qg_out_scale(w);
}

int ops_qgemm_set_acc(struct ops_instance *inst, const int64_t *acc, struct opr_error *err)
{
	struct qg_priv *pv = inst->priv;

	if (inst->work.group != OPS_G_QGEMM && inst->work.group != OPS_G_QGEMM_DQ_BIAS_ACT)
		return opr_error_set(err, OPR_EINTERNAL, "not a qgemm instance");
	if (inst->dry || !pv)
		return opr_error_set(err, OPR_EINTERNAL, "a planning instance has no accumulators");
	memcpy(pv->acc, acc, (size_t)(inst->work.gemm.m * inst->work.gemm.n) * sizeof *pv->acc);
	pv->acc_valid = 1;
	return 0;
}

const int64_t *ops_qgemm_last_acc(const struct ops_instance *inst)
{
	const struct qg_priv *pv = inst->priv;

	return pv && pv->acc_valid ? pv->acc : NULL;
}

/* ---- running a plan on the device ---------------------------------------------- */

/* One run: the workload, the resolved plan and the host pointers standing for
 * GLOBAL (NULL in a dry run). */
struct qg_run {
	struct ops_device *dev;
	const struct ops_workload *w;
	struct ops_qgemm_tiles t;
	int dry, db, accb, outb;
	int64_t m, n, k;
	double a_scale, out_scale;
	const void *a;
	const int8_t *b;
	const int8_t *bp;       /* B packed (ops_qgemm_pack_b) or NULL: read in place */
	int64_t bkp;            /* the packed layout's row length */
	const float *scale, *bias;
	void *y;
	struct qg_priv *pv;
};

/* p + off bytes, or NULL in a dry run (no arithmetic on NULL). */
static void *qg_at(const void *p, int64_t off)
{
	return p ? (char *)(uintptr_t)p + off : NULL;
}

/* A [rows, cols] DMA; count_only: counted exactly, nothing moved (the
 * one-pass GEMM reads its K tiles in place). */
static int qg_dma2x(struct ops_device *dev, enum ops_space ds, void *dst, int64_t dld,
		    enum ops_space ss, const void *src, int64_t sld, int64_t rows,
		    int64_t cols, size_t eb, int count_only, struct opr_error *err)
{
	struct ops_dma_desc d;

	memset(&d, 0, sizeof d);
	d.rank = 2;
	d.shape[0] = rows;
	d.shape[1] = cols;
	d.src_stride[0] = sld;
	d.src_stride[1] = 1;
	d.dst_stride[0] = dld;
	d.dst_stride[1] = 1;
	d.elem_bytes = eb;
	if (count_only)
		return ops_dma_split_count(dev, ds, ss, &d, err);
	return ops_dma_split(dev, ds, dst, ss, src, &d, err);
}

static int qg_dma2(struct ops_device *dev, enum ops_space ds, void *dst, int64_t dld,
		   enum ops_space ss, const void *src, int64_t sld, int64_t rows,
		   int64_t cols, size_t eb, struct opr_error *err)
{
	return qg_dma2x(dev, ds, dst, dld, ss, src, sld, rows, cols, eb, 0, err);
}

static int64_t qg_get_acc(const void *buf, int accb, int64_t i)
{
	return accb == 4 ? ((const int32_t *)buf)[i] : ((const int64_t *)buf)[i];
}

static void qg_set_acc(void *buf, int accb, int64_t i, int64_t v)
{
	if (accb == 4)
		((int32_t *)buf)[i] = (int32_t)v;
	else
		((int64_t *)buf)[i] = v;
}

static void qg_release_all(struct ops_device *dev, struct ops_buf *b, int nb)
{
	for (int i = 0; i < nb; i++)
		if (b[i].bytes)
			ops_buf_release(dev, &b[i]);
}


/* One split part on the current core: streams its K tiles of the n tile
 * [j0, j0+tn) and leaves its [m,tn] partial accumulators in *partial
 * (SHARED of this core, allocated here; the caller releases it). A
 * double-buffered plan holds two A/B pairs (ping-pong). */
static int qg_part(struct qg_run *r, int64_t j0, int64_t tn, int64_t part,
		   struct ops_buf *partial, struct opr_error *err)
{
	struct qg_priv *pv = r->pv;
	int64_t m = r->m, k = r->k, kk = r->t.kk, zp = r->w->quant.a_zero_point;
	int64_t kt0 = part * r->t.ntk / r->t.parts, kt1 = (part + 1) * r->t.ntk / r->t.parts;
	int npair = r->db ? 2 : 1;
	/* The host kernel sums `group` consecutive K tiles of the part in one
	 * call, as many as stay exact in int32 (OPS_QGEMM_MAX_TILE_KK): it reads
	 * them in place (one pass), so the K tile, the accelerator's SHARED
	 * staging unit, says nothing about the host's work, and one call per
	 * 256-element tile spent more on its 512 reductions and the widening
	 * below than on the products (1.5-2x the time of 1 KiB tiles). The
	 * transfers and the compute are still counted tile by tile. */
	int64_t group = OPS_QGEMM_MAX_TILE_KK / kk;
	struct ops_buf ab[2], bb[2];
	int rc = 0;

	memset(ab, 0, sizeof ab);
	memset(bb, 0, sizeof bb);
	memset(partial, 0, sizeof *partial);
	for (int i = 0; i < npair; i++)
		if ((rc = ops_buf_alloc(r->dev, OPS_SHARED, (size_t)(m * kk), &ab[i], err)) ||
		    (rc = ops_buf_alloc(r->dev, OPS_SHARED, (size_t)(tn * kk), &bb[i], err)))
			goto out;
	if ((rc = ops_buf_alloc(r->dev, OPS_SHARED, (size_t)(m * tn * r->accb), partial, err)))
		goto out;
	if (!r->dry)
		memset(pv->run, 0, (size_t)(m * tn) * sizeof *pv->run);
	for (int64_t kt = kt0; kt < kt1; kt++) {
		int64_t k0 = kt * kk, len = k - k0 < kk ? k - k0 : kk;
		int s = (int)((kt - kt0) % npair);
		uint64_t wr = kt == kt1 - 1 ? (uint64_t)(m * tn * r->accb) : 0;

		/* one pass: the tiles' transfers are counted as issued, and the
		 * host kernel reads the K tile in place (see qg_run_impl) */
		if ((rc = qg_dma2x(r->dev, OPS_SHARED, ab[s].data, len, OPS_GLOBAL,
				   qg_at(r->a, k0), k, m, len, 1, 1, err)) ||
		    (rc = qg_dma2x(r->dev, OPS_SHARED, bb[s].data, len, OPS_GLOBAL,
				   qg_at(r->b, j0 * k + k0), k, tn, len, 1, 1, err)))
			goto out;
		if (!r->dry && (kt == kt1 - 1 || (kt - kt0 + 1) % group == 0)) {
			int64_t g0 = kt - (kt - kt0) % group, gk0 = g0 * kk, glen = k0 + len - gk0;
			const void *at = qg_at(r->a, gk0);
			const int8_t *bt = qg_at(r->b, j0 * k + gk0);
			/* exact per group in int32, widened to int64 across groups;
			 * zero point: sum (a - zp) b = sum a b - zp sum b */
			/* (B's column sums, for the zero point, in the same pass:
			 * a second pass read a large K tile of B again) */
			if (r->bp)
				ops_qgemm_kernel_packed(r->w->quant.a, at, k, r->bp + j0 * r->bkp,
							tn, gk0, m, glen, pv->raw,
							zp ? pv->colsum : NULL);
			else
				ops_qgemm_kernel_ld(r->w->quant.a, at, k, bt, k, m, tn, glen,
						    pv->raw, zp ? pv->colsum : NULL, pv->a16);
			for (int64_t i = 0; i < m; i++)
				for (int64_t j = 0; j < tn; j++)
					pv->run[i * tn + j] += (int64_t)pv->raw[i * tn + j] -
						(zp ? zp * pv->colsum[j] : 0);
		}
		ops_compute(r->dev, r->w->quant.a, (uint64_t)(m * tn * len), 0,
			    (uint64_t)((m + tn) * len), wr);
	}
	if (!r->dry)
		for (int64_t i = 0; i < m * tn; i++)
			qg_set_acc(partial->data, r->accb, i, pv->run[i]);
out:
	qg_release_all(r->dev, ab, 2);
	qg_release_all(r->dev, bb, 2);
	if (rc)
		qg_release_all(r->dev, partial, 1);
	return rc;
}

/* The element-wise stages after the GEMM, on an [m,w] tile in SHARED. */
enum qg_stage { QG_DEQUANT, QG_BIAS, QG_ACT, QG_REQUANT };

/* Host arithmetic of one stage. acc: accumulators (DEQUANT, REQUANT), sc:
 * the tile's scales ([w] or [1]), bias: [w]; y: fp32 [m,w] (in place for
 * BIAS and ACT) or s8 (REQUANT). */
static void qg_stage_host(const struct qg_run *r, enum qg_stage s, const void *acc,
			  const float *sc, const float *bias, void *y, int64_t w)
{
	int pc = r->w->quant.b_per_channel;
	float *yf = y;
	int8_t *yq = y;

	for (int64_t i = 0; i < r->m; i++) {
		for (int64_t j = 0; j < w && s != QG_ACT; j++) {
			int64_t e = i * w + j;
			double bs = sc ? (double)sc[pc ? j : 0] : 0;
			if (s == QG_DEQUANT) {
				yf[e] = (float)(r->a_scale * bs * (double)qg_get_acc(acc, r->accb, e));
			} else if (s == QG_BIAS) {
				yf[e] = yf[e] + bias[j];
			} else {
				/* nearbyint rounds half to even in the default mode */
				double v = nearbyint(r->a_scale * bs * (double)qg_get_acc(acc, r->accb, e) /
						     r->out_scale) + r->w->quant.out_zero_point;
				yq[e] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
			}
		}
		if (s == QG_ACT)
			ops_act_f32(r->w->act, yf + i * w, yf + i * w, (size_t)w);
	}
}

/* Loads the tile's scales (and bias) into SHARED. */
static int qg_load_vec(struct qg_run *r, enum qg_stage s, int64_t j0, int64_t w,
		       struct ops_buf *v, struct opr_error *err)
{
	int64_t cnt = s == QG_BIAS ? w : r->w->quant.b_per_channel ? w : 1;
	const float *src = s == QG_BIAS ? r->bias : r->scale;
	int64_t off = s == QG_BIAS || r->w->quant.b_per_channel ? j0 : 0;
	int rc;

	if ((rc = ops_buf_alloc(r->dev, OPS_SHARED, (size_t)cnt * 4, v, err)))
		return rc;
	return qg_dma2(r->dev, OPS_SHARED, v->data, cnt, OPS_GLOBAL, qg_at(src, off * 4), cnt,
		       1, cnt, 4, err);
}

/* The fused epilogue of an n tile on the part-0 core: scales (and bias) in,
 * dequant+bias+activation or requant on the SHARED accumulators, y out. */
static int qg_epilogue(struct qg_run *r, int64_t j0, int64_t w, const struct ops_buf *acc,
		       struct opr_error *err)
{
	int64_t m = r->m, mw = r->m * w;
	int bias = qg_has_bias(r->w), requant = r->w->quant.out == OPS_S8;
	int64_t nsc = r->w->quant.b_per_channel ? w : 1;
	struct ops_buf b[3];
	uint64_t elem, rd;
	int rc;

	memset(b, 0, sizeof b);
	if ((rc = qg_load_vec(r, QG_DEQUANT, j0, w, &b[0], err)) ||
	    (bias && (rc = qg_load_vec(r, QG_BIAS, j0, w, &b[1], err))) ||
	    (rc = ops_buf_alloc(r->dev, OPS_SHARED, (size_t)(mw * r->outb), &b[2], err)))
		goto out;
	if (!r->dry) {
		qg_stage_host(r, requant ? QG_REQUANT : QG_DEQUANT, acc->data, b[0].data, NULL,
			      b[2].data, w);
		if (bias) {
			qg_stage_host(r, QG_BIAS, NULL, NULL, b[1].data, b[2].data, w);
			qg_stage_host(r, QG_ACT, NULL, NULL, NULL, b[2].data, w);
		}
	}
	/* one element op per stage and element: dequant (or requant), bias, act */
	elem = (uint64_t)mw * (bias ? 3 : 1);
	rd = (uint64_t)(mw * r->accb + 4 * nsc + (bias ? 4 * w : 0));
	ops_compute(r->dev, OPS_F32, 0, elem, rd, (uint64_t)(mw * r->outb));
	rc = qg_dma2(r->dev, OPS_GLOBAL, qg_at(r->y, j0 * r->outb), r->n, OPS_SHARED, b[2].data,
		     w, m, w, (size_t)r->outb, err);
out:
	qg_release_all(r->dev, b, 3);
	return rc;
}

/* One n tile of the GEMM launch: the split parts (part 0 last, so its core
 * does the reduction), the SHARED->SHARED reduction, then the epilogue, or
 * the accumulators out to gacc (GLOBAL) when unfused. */
static int qg_ntile(struct qg_run *r, int64_t jt, struct ops_buf *gacc, struct opr_error *err)
{
	int64_t j0 = jt * r->t.tn, w = r->n - j0 < r->t.tn ? r->n - j0 : r->t.tn;
	int64_t parts = r->t.parts, mw = r->m * w;
	struct ops_buf part[OPS_MAX_CORES], recv;
	int rc = 0;

	memset(part, 0, sizeof part);
	memset(&recv, 0, sizeof recv);
	for (int64_t p = parts - 1; p >= 0; p--) {
		ops_tile_begin(r->dev, jt * parts + p);
		if ((rc = qg_part(r, j0, w, p, &part[p], err)))
			goto out;
	}
	if (parts > 1) {
		if ((rc = ops_buf_alloc(r->dev, OPS_SHARED, (size_t)(mw * r->accb), &recv, err)))
			goto out;
		for (int64_t p = 1; p < parts; p++) {
			if ((rc = qg_dma2(r->dev, OPS_SHARED, recv.data, w, OPS_SHARED, part[p].data,
					  w, r->m, w, (size_t)r->accb, err)))
				goto out;
			if (!r->dry)
				for (int64_t e = 0; e < mw; e++)
					qg_set_acc(part[0].data, r->accb, e,
						   qg_get_acc(part[0].data, r->accb, e) +
						   qg_get_acc(recv.data, r->accb, e));
		}
		ops_compute(r->dev, OPS_S32, 0, (uint64_t)((parts - 1) * mw),
			    (uint64_t)(2 * (parts - 1) * mw * r->accb),
			    (uint64_t)((parts - 1) * mw * r->accb));
	}
	if (!r->dry)
		for (int64_t i = 0; i < r->m; i++)
			for (int64_t j = 0; j < w; j++)
				r->pv->acc[i * r->n + j0 + j] = qg_get_acc(part[0].data, r->accb, i * w + j);
	if (gacc)
		rc = qg_dma2(r->dev, OPS_GLOBAL, qg_at(gacc->data, j0 * r->accb), r->n, OPS_SHARED,
			     part[0].data, w, r->m, w, (size_t)r->accb, err);
	else
		rc = qg_epilogue(r, j0, w, &part[0], err);
out:
	/* the device finds a released footprint by (space, bytes), current core
	 * first: give back this core's buffers before the other parts' partials
	 * (same size) so each core gets its own back */
	qg_release_all(r->dev, &recv, 1);
	qg_release_all(r->dev, part, (int)parts);
	return rc;
}

/* One unfused element-wise launch over the n tiles: reads its input tile
 * from GLOBAL (the accumulators for dequant/requant, y otherwise) and the
 * scales or bias, computes in SHARED and writes y back to GLOBAL. */
static int qg_stage_launch(struct qg_run *r, enum qg_stage s, const char *name,
			   const struct ops_buf *gacc, struct opr_error *err)
{
	int from_acc = s == QG_DEQUANT || s == QG_REQUANT;
	int64_t inb = from_acc ? r->accb : 4, outb = s == QG_REQUANT ? 1 : 4;
	int rc, rc2;

	if ((rc = ops_launch_begin(r->dev, name, r->db, err)))
		return rc;
	for (int64_t jt = 0; jt < r->t.ntn && !rc; jt++) {
		int64_t j0 = jt * r->t.tn, w = r->n - j0 < r->t.tn ? r->n - j0 : r->t.tn;
		int64_t mw = r->m * w, nv = 0;
		const void *src = from_acc ? gacc->data : r->y;
		struct ops_buf b[3];
		void *out;

		memset(b, 0, sizeof b);
		ops_tile_begin(r->dev, jt);
		if ((rc = ops_buf_alloc(r->dev, OPS_SHARED, (size_t)(mw * inb), &b[0], err)) ||
		    (rc = qg_dma2(r->dev, OPS_SHARED, b[0].data, w, OPS_GLOBAL,
				  qg_at(src, j0 * inb), r->n, r->m, w, (size_t)inb, err)))
			goto next;
		if (s != QG_ACT) {
			if ((rc = qg_load_vec(r, s, j0, w, &b[1], err)))
				goto next;
			nv = (int64_t)b[1].bytes;
		}
		out = b[0].data;
		if (from_acc) {
			if ((rc = ops_buf_alloc(r->dev, OPS_SHARED, (size_t)(mw * outb), &b[2], err)))
				goto next;
			out = b[2].data;
		}
		if (!r->dry)
			qg_stage_host(r, s, b[0].data, s == QG_BIAS ? NULL : b[1].data,
				      s == QG_BIAS ? b[1].data : NULL, out, w);
		ops_compute(r->dev, OPS_F32, 0, (uint64_t)mw, (uint64_t)(mw * inb + nv),
			    (uint64_t)(mw * outb));
		rc = qg_dma2(r->dev, OPS_GLOBAL, qg_at(r->y, j0 * outb), r->n, OPS_SHARED, out, w,
			     r->m, w, (size_t)outb, err);
next:
		qg_release_all(r->dev, b, 3);
	}
	rc2 = ops_launch_end(r->dev, rc ? NULL : err);
	return rc ? rc : rc2;
}

static const struct ops_tensor *qg_tensor(const struct ops_instance *inst, const char *name)
{
	for (int i = 0; i < inst->nt; i++)
		if (!strcmp(inst->t[i].name, name))
			return &inst->t[i];
	return NULL;
}

/* B packed for the path's kernel (qgemm_int.h), kept by the instance while
 * B's data and version, the n tile and the chunk stay, as the bf16 conv
 * keeps its packed weights: weights are packed once, as oneDNN's reorder to
 * its preferred layout does. NULL where the path reads B in place, where a
 * K tile is no multiple of 4 (the packed kernel starts on a quad), or
 * where the memory is short: the in-place kernel then gives the same sums. */
static const int8_t *qg_packed_b(struct ops_instance *inst, const struct qg_run *r)
{
	struct qg_priv *pv = inst->priv;
	const struct ops_tensor *tb = qg_tensor(inst, "b");
	int64_t kc = ops_qgemm_pack_chunk();

	if (!kc || r->t.kk % 4)
		return NULL;
	if (pv->bpack && pv->bpack_src == tb->data && pv->bpack_ver == tb->version &&
	    pv->bpack_tn == r->t.tn && pv->bpack_kc == kc)
		return pv->bpack;
	free(pv->bpack);
	pv->bpack_src = NULL;
	if (!(pv->bpack = ops_host_alloc((size_t)ops_qgemm_packed_bytes(r->n, r->k, kc))))
		return NULL;
	ops_qgemm_pack_b(tb->data, r->n, r->k, r->t.tn, kc, pv->bpack);
	pv->bpack_src = tb->data;
	pv->bpack_ver = tb->version;
	pv->bpack_tn = r->t.tn;
	pv->bpack_kc = kc;
	return pv->bpack;
}

static int qg_run_impl(struct ops_device *dev, struct ops_instance *inst, struct opr_error *err)
{
	const struct ops_workload *w = &inst->work;
	int one = !qg_is_fused_group(w) || inst->plan.fused;
	struct ops_buf gacc;
	struct qg_run r;
	const char *name;
	int rc, rc2;

	if ((rc = qg_check(w, err)))
		return rc;
	memset(&r, 0, sizeof r);
	memset(&gacc, 0, sizeof gacc);
	r.dev = dev;
	r.w = w;
	r.dry = ops_device_dry_run(dev);
	if (!r.dry && (inst->dry || !inst->priv))
		return opr_error_set(err, OPR_EINTERNAL,
				     "a planning instance of 'qgemm' cannot run on a real device");
	if ((rc = ops_qgemm_tiles_get(w, &inst->plan, ops_device_envelope(dev)->cores, &r.t, err)))
		return rc;
	r.db = inst->plan.double_buffer;
	r.accb = ops_qgemm_acc_bytes(w);
	r.outb = w->quant.out == OPS_F32 ? 4 : 1;
	r.m = w->gemm.m;
	r.n = w->gemm.n;
	r.k = w->gemm.k;
	r.a_scale = qg_a_scale(w);
	r.out_scale = qg_out_scale(w);
	r.pv = inst->priv;
	if (!r.dry) {
		const struct ops_tensor *tb = qg_tensor(inst, "bias");
		r.a = qg_tensor(inst, "a")->data;
		r.b = qg_tensor(inst, "b")->data;
		r.scale = qg_tensor(inst, "scale_b")->data;
		r.bias = tb ? tb->data : NULL;
		r.y = inst->t[inst->out_index].data;
		r.pv->acc_valid = 0;
		for (int64_t i = 0; i < r.m * r.n; i++)
			r.pv->acc[i] = INT64_MIN;
		if ((r.bp = qg_packed_b(inst, &r)))
			r.bkp = (int64_t)(ops_qgemm_packed_bytes(1, r.k, ops_qgemm_pack_chunk()));
	}
	if (!one && (rc = ops_buf_alloc(dev, OPS_GLOBAL, (size_t)(r.m * r.n * r.accb), &gacc, err)))
		return rc;
	name = !one || !qg_is_fused_group(w) ? "qgemm"
		: w->quant.out == OPS_F32 ? "qgemm+dequant+bias+act" : "qgemm+requant";
	if ((rc = ops_launch_begin(dev, name, r.db, err)))
		goto out;
	/* One pass (device_int.h): the host has no DMA engine beside its core,
	 * so staging each K tile of A and B through SHARED was a copy of all of
	 * B (64 MiB in make bench's 8x64x2^20) before the kernel read it again;
	 * the kernel now streams B from GLOBAL while it computes. The counters
	 * are the accelerator's, unchanged (every transfer counted, the SHARED
	 * buffers still allocated); the record says one_pass. */
	ops_launch_one_pass(dev);
	for (int64_t jt = 0; jt < r.t.ntn && !rc; jt++)
		rc = qg_ntile(&r, jt, one ? NULL : &gacc, err);
	rc2 = ops_launch_end(dev, rc ? NULL : err);
	if ((rc = rc ? rc : rc2) || one)
		goto out;
	if (w->quant.out == OPS_S8) {
		rc = qg_stage_launch(&r, QG_REQUANT, "requant", &gacc, err);
	} else if (!(rc = qg_stage_launch(&r, QG_DEQUANT, "dequant", &gacc, err)) &&
		   !(rc = qg_stage_launch(&r, QG_BIAS, "bias", &gacc, err))) {
		rc = qg_stage_launch(&r, QG_ACT, "activation", &gacc, err);
	}
out:
	qg_release_all(dev, &gacc, 1);
	if (!rc && !r.dry)
		r.pv->acc_valid = 1;
	return rc;
}

/* ---- quality ----------------------------------------------------------------- */

static int qg_quality(const struct ops_instance *inst, struct ops_quality *q,
		      struct opr_error *err)
{
	const struct ops_workload *w = &inst->work;
	const struct qg_priv *pv = inst->priv;
	const struct ops_tensor *ta = qg_tensor(inst, "a"), *tb = qg_tensor(inst, "b");
	const struct ops_tensor *ts = qg_tensor(inst, "scale_b"), *tbias = qg_tensor(inst, "bias");
	const void *y = inst->t[inst->out_index].data;
	int64_t m = w->gemm.m, n = w->gemm.n, mn = m * n;
	double as = qg_a_scale(w), os = qg_out_scale(w);
	int64_t *ref;
	double *refy;

	if (!pv || !pv->acc_valid || !ta || !tb || !ts || !ta->data)
		return opr_error_set(err, OPR_EINTERNAL, "'qgemm' has no output to check before a run");
	ref = malloc((size_t)mn * sizeof *ref);
	refy = malloc((size_t)mn * sizeof *refy);
	if (!ref || !refy) {
		free(ref);
		free(refy);
		return opr_error_set(err, OPR_ENOMEM, "out of memory for the 'qgemm' reference");
	}
	ops_qgemm_ref_acc(w, ta->data, tb->data, ref);
	memset(q, 0, sizeof *q);
	q->exact_int = 1;
	for (int64_t e = 0; e < mn; e++) {
		int64_t j = e % n;
		double bs = ((const float *)ts->data)[w->quant.b_per_channel ? j : 0];
		double v = as * bs * (double)ref[e];
		if (pv->acc[e] != ref[e])
			q->exact_int = 0;
		if (w->quant.out == OPS_S8) {
			v = nearbyint(v / os) + w->quant.out_zero_point;
			refy[e] = v < -128 ? -128 : v > 127 ? 127 : v;
		} else if (tbias) {
			refy[e] = ops_act_ref(w->act, v + ((const float *)tbias->data)[j]);
		} else {
			refy[e] = v;
		}
	}
	if (w->quant.out == OPS_F32) {
		q->rel_l2 = ops_rel_l2(OPS_F32, y, refy, mn);
	} else {
		double num = 0, den = 0;
		for (int64_t e = 0; e < mn; e++) {
			double d = ((const int8_t *)y)[e] - refy[e];
			if (fabs(d) > q->max_abs_lsb)
				q->max_abs_lsb = fabs(d);
			num += d * d;
			den += refy[e] * refy[e];
		}
		q->rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
	}
	free(ref);
	free(refy);
	return 0;
}

/* ---- plans ------------------------------------------------------------------ */

static int qg_seen(const int64_t *v, int nv, int64_t x)
{
	for (int i = 0; i < nv; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* A candidate with its ordering key. */
struct qg_cand {
	struct ops_plan p;
	int fits;
};

/* SHARED bytes one core needs at most under plan (tn, kk, db): the A/B tiles
 * (twice when double-buffered) and the partial accumulators while streaming,
 * plus the received partial and the epilogue buffers on the part-0 core. An
 * estimate for ordering candidates only; the dry run decides. */
static uint64_t qg_footprint(const struct ops_workload *w, int64_t tn, int64_t kk, int db)
{
	uint64_t m = (uint64_t)w->gemm.m, accb = (uint64_t)ops_qgemm_acc_bytes(w);
	uint64_t outb = w->quant.out == OPS_F32 ? 4 : 1;

	return (uint64_t)(db ? 2 : 1) * (m + (uint64_t)tn) * (uint64_t)kk +
	       m * (uint64_t)tn * (2 * accb + outb) + 8 * (uint64_t)tn;
}

/* fitting first, then double-buffered, wider n tiles, longer K tiles, fewer
 * split parts */
static int qg_cand_cmp(const void *x, const void *y)
{
	const struct qg_cand *a = x, *b = y;

	if (a->fits != b->fits)
		return b->fits - a->fits;
	if (a->p.double_buffer != b->p.double_buffer)
		return b->p.double_buffer - a->p.double_buffer;
	if (a->p.p[0] != b->p.p[0])
		return a->p.p[0] < b->p.p[0] ? 1 : -1;
	if (a->p.p[1] != b->p.p[1])
		return a->p.p[1] < b->p.p[1] ? 1 : -1;
	return a->p.split_k - b->p.split_k;
}

/* tile_n in {8,16,32,64,n}, tile_kk in {256,1024,4096,16384,65536} (all at or
 * below the exact bound), split_k in {1,2,4,8,cores}, each clamped to the
 * shape and the cores and deduplicated, double- and single-buffered. When
 * more than max, the ones whose SHARED estimate fits the envelope come first
 * (order of qg_cand_cmp), so a capped planner still sees the useful ones. */
static size_t qg_plans(const struct ops_envelope *env, const struct ops_workload *w,
		       int fused, struct ops_plan *out, size_t max)
{
	const int64_t tns[] = {8, 16, 32, 64, w->gemm.n};
	const int64_t kks[] = {256, 1024, 4096, 16384, OPS_QGEMM_MAX_TILE_KK};
	const int64_t sps[] = {1, 2, 4, 8, env->cores};
	uint64_t cap = (uint64_t)(env->shared_capacity_kib * 1024.0);
	struct qg_cand cand[2 * 5 * 5 * 5];
	int64_t vt[5], vk[5];
	int nvt = 0, nvk = 0;
	size_t cnt = 0;

	for (int a = 0; a < 5; a++) {
		int64_t tn = tns[a] < w->gemm.n ? tns[a] : w->gemm.n;
		if (!qg_seen(vt, nvt, tn))
			vt[nvt++] = tn;
	}
	for (int a = 0; a < 5; a++) {
		int64_t kk = kks[a] < w->gemm.k ? kks[a] : w->gemm.k;
		if (!qg_seen(vk, nvk, kk))
			vk[nvk++] = kk;
	}
	for (int db = 1; db >= 0; db--)
		for (int a = 0; a < nvt; a++)
			for (int b = 0; b < nvk; b++) {
				int64_t ntk = (w->gemm.k + vk[b] - 1) / vk[b], vs[5];
				int nvs = 0;
				for (int c = 0; c < 5; c++) {
					int64_t s = sps[c];
					struct qg_cand *q = &cand[cnt];
					if (s > env->cores)
						s = env->cores;
					if (s > ntk)
						s = ntk;
					if (s < 1 || qg_seen(vs, nvs, s))
						continue;
					vs[nvs++] = s;
					memset(q, 0, sizeof *q);
					q->p.fused = fused;
					q->p.strategy = OPS_STRAT_DIRECT;
					q->p.p[0] = vt[a];
					q->p.p[1] = vk[b];
					q->p.p[2] = s;
					q->p.split_k = (int)s;
					q->p.double_buffer = db;
					q->fits = qg_footprint(w, vt[a], vk[b], db) <= cap;
					cnt++;
				}
			}
	qsort(cand, cnt, sizeof cand[0], qg_cand_cmp);
	if (cnt > max)
		cnt = max;
	for (size_t i = 0; i < cnt; i++)
		out[i] = cand[i].p;
	return cnt;
}

const struct ops_group_impl ops_impl_qgemm = {
	.group = OPS_G_QGEMM,
	.check = qg_check,
	.bytes = qg_bytes,
	.prepare = qg_prepare,
	.run = qg_run_impl,
	.quality = qg_quality,
	.plans = qg_plans,
	.release = qg_release,
	.params = qg_params,
};

const struct ops_group_impl ops_impl_qgemm_dq_bias_act = {
	.group = OPS_G_QGEMM_DQ_BIAS_ACT,
	.check = qg_check,
	.bytes = qg_bytes,
	.prepare = qg_prepare,
	.run = qg_run_impl,
	.quality = qg_quality,
	.plans = qg_plans,
	.release = qg_release,
	.params = qg_params,
};
