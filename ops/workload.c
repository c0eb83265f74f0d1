/* ops/workload.c: the workload layer of ops/: prepared instances (tensors
 * filled from the seeded generator, outputs poisoned before every run), the
 * dispatch table over the groups, plan parameter names and descriptions. */
#include "ops_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Groups written in other files are referenced weakly, so the program links
 * (and reports "not implemented yet") while one of them is missing. */
extern const struct ops_group_impl ops_impl_conv __attribute__((weak));
extern const struct ops_group_impl ops_impl_conv_bias_act __attribute__((weak));
extern const struct ops_group_impl ops_impl_qgemm __attribute__((weak));
extern const struct ops_group_impl ops_impl_qgemm_dq_bias_act __attribute__((weak));
extern const struct ops_group_impl ops_impl_permute __attribute__((weak));
extern const struct ops_group_impl ops_impl_permute_act __attribute__((weak));

const struct ops_group_impl *ops_group_impl(enum ops_group g)
{
	const struct ops_group_impl *impl = NULL;
	switch (g) {
	case OPS_G_ACTIVATION:
		impl = &ops_impl_activation;
		break;
	case OPS_G_CONV:
		impl = &ops_impl_conv;
		break;
	case OPS_G_CONV_BIAS_ACT:
		impl = &ops_impl_conv_bias_act;
		break;
	case OPS_G_QGEMM:
		impl = &ops_impl_qgemm;
		break;
	case OPS_G_QGEMM_DQ_BIAS_ACT:
		impl = &ops_impl_qgemm_dq_bias_act;
		break;
	case OPS_G_PERMUTE:
		impl = &ops_impl_permute;
		break;
	case OPS_G_PERMUTE_ACT:
		impl = &ops_impl_permute_act;
		break;
	case OPS_NGROUPS:
		break;
	}
	/* an undefined weak symbol has address NULL */
	return impl;
}

/* The impl of w's group or an error (OPR_EINPUT, OPR_ENOTIMPL). */
static int impl_of(const struct ops_workload *w, const struct ops_group_impl **out,
		   struct opr_error *err)
{
	if ((int)w->group < 0 || w->group >= OPS_NGROUPS)
		return opr_error_set(err, OPR_EINPUT, "unknown group %d", (int)w->group);
	*out = ops_group_impl(w->group);
	if (!*out)
		return opr_error_set(err, OPR_ENOTIMPL, "group '%s' is not implemented yet",
				     ops_group_name(w->group));
	return 0;
}

const char *const *ops_plan_params(enum ops_group g)
{
	static const char *const none[] = { NULL };
	const struct ops_group_impl *impl =
		(int)g >= 0 && g < OPS_NGROUPS ? ops_group_impl(g) : NULL;
	return impl && impl->params ? impl->params : none;
}

void ops_plan_describe(enum ops_group g, const struct ops_plan *p, char *buf, size_t len)
{
	static const char *const strat[OPS_NSTRATS] = {
		"untiled", "direct", "im2col", "winograd"
	};
	const char *const *names = ops_plan_params(g);
	size_t used = 0;

	if (!len)
		return;
	buf[0] = '\0';
#define APPEND(...)                                                              \
	do {                                                                     \
		int n_ = snprintf(buf + used, len - used, __VA_ARGS__);          \
		if (n_ < 0 || (size_t)n_ >= len - used)                          \
			return; /* truncated (snprintf terminated it) */                \
		used += (size_t)n_;                                              \
	} while (0)
	APPEND("%s", (int)p->strategy >= 0 && p->strategy < OPS_NSTRATS
	       ? strat[p->strategy] : "?");
	int named_split_k = 0;
	for (int i = 0; i < OPS_PLAN_MAX_PARAMS && names[i]; i++) {
		named_split_k |= !strcmp(names[i], "split_k");
		if (p->p[i] > 0)
			APPEND(" %s=%lld", names[i], (long long)p->p[i]);
		else
			APPEND(" %s=auto", names[i]);
	}
	if (p->split_k > 1 && !named_split_k) /* else printed as a parameter */
		APPEND(" split_k=%d", p->split_k);
	APPEND(" %s", p->double_buffer ? "double-buffered" : "single-buffered");
	APPEND(" %s", p->fused ? "fused" : "unfused");
#undef APPEND
}

/* ---- instances ------------------------------------------------------------ */

static int instance_new(const struct ops_workload *w, const struct ops_plan *plan,
			uint64_t seed, const char *block, int dry,
			struct ops_instance **out, struct opr_error *err)
{
	const struct ops_group_impl *impl;
	struct ops_instance *inst;
	int rc;

	*out = NULL;
	if ((rc = impl_of(w, &impl, err)) < 0)
		return rc;
	if ((rc = impl->check(w, err)) < 0)
		return rc;
	inst = calloc(1, sizeof *inst);
	if (!inst)
		return opr_error_set(err, OPR_ENOMEM, "out of memory for an instance of '%s'",
				     ops_group_name(w->group));
	inst->work = *w;
	if (plan) {
		inst->plan = *plan;
	} else {
		/* NULL: every parameter at its default, double-buffered */
		inst->plan.double_buffer = 1;
	}
	inst->seed = seed;
	snprintf(inst->block, sizeof inst->block, "%s", block ? block : "");
	inst->dry = dry;
	inst->out_index = -1;
	if ((rc = impl->prepare(inst, err)) < 0)
		goto fail;
	if (inst->out_index < 0 || inst->out_index >= inst->nt) {
		rc = opr_error_set(err, OPR_EINTERNAL, "group '%s' declared no output tensor",
				   ops_group_name(w->group));
		goto fail;
	}
	*out = inst;
	return 0;
fail:
	ops_instance_free(inst);
	return rc;
}

int ops_instance_new(const struct ops_workload *w, const struct ops_plan *plan,
		     uint64_t seed, const char *block, struct ops_instance **out,
		     struct opr_error *err)
{
	return instance_new(w, plan, seed, block, 0, out, err);
}

int ops_instance_new_dry(const struct ops_workload *w, const struct ops_plan *plan,
			 struct ops_instance **out, struct opr_error *err)
{
	return instance_new(w, plan, 0, "plan", 1, out, err);
}

void ops_instance_free(struct ops_instance *inst)
{
	if (!inst)
		return;
	const struct ops_group_impl *impl = ops_group_impl(inst->work.group);
	if (impl && impl->release)
		impl->release(inst);
	for (int i = 0; i < inst->nt; i++)
		free(inst->t[i].data);
	free(inst);
}

/* A tensor's storage: 64-byte aligned; from 4 MiB on, in whole 2 MiB pages
 * the kernel may back with transparent huge pages (Linux's default
 * "madvise" mode grants them only when asked). A streaming kernel over a
 * 4 KiB-paged tensor walks a new page, and a page-table entry, every 4 KiB:
 * qgemm's B rows (1 MiB apart) and a transpose's columns each touch another
 * page per cache line, and on an AVX-512 test host the page walks cost
 * 15-35% of their time. The advice is a hint: refused, the pages stay 4 KiB.
 * free() releases either. */
void *ops_host_alloc(size_t bytes)
{
	const size_t huge = (size_t)2 << 20;
	void *p;

	if (bytes < 2 * huge || bytes > SIZE_MAX - huge)
		return aligned_alloc(64, bytes);
	bytes = (bytes + huge - 1) / huge * huge;
	p = aligned_alloc(huge, bytes);
#ifdef MADV_HUGEPAGE
	if (p)
		(void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
	return p;
}

/* Fills a float tensor: the generator works in fp32, narrower dtypes are
 * rounded from it (fp16 values that round to zero are replaced by the
 * smallest subnormal of the same sign: inputs are never zero). */
static int fill_float(struct ops_tensor *t, uint64_t key, float lo, float hi,
		      struct opr_error *err)
{
	size_t n = (size_t)t->count;
	if (t->dtype == OPS_F32) {
		ops_rng_fill_f32(key, t->data, n, lo, hi);
		return 0;
	}
	float *tmp = malloc(n ? n * sizeof *tmp : 1);
	if (!tmp)
		return opr_error_set(err, OPR_ENOMEM, "out of memory filling tensor '%s'", t->name);
	ops_rng_fill_f32(key, tmp, n, lo, hi);
	ops_from_f32(t->dtype, tmp, t->data, n);
	if (t->dtype == OPS_F16) {
		uint16_t *h = t->data;
		for (size_t i = 0; i < n; i++)
			if ((h[i] & 0x7fffu) == 0)
				h[i] = (uint16_t)(h[i] | 1u);
	}
	free(tmp);
	return 0;
}

static int fill_int(struct ops_tensor *t, uint64_t key, int lo, int hi,
		    struct opr_error *err)
{
	size_t n = (size_t)t->count;
	switch (t->dtype) {
	case OPS_S8:
		ops_rng_fill_i8(key, t->data, n, lo, hi);
		return 0;
	case OPS_U8:
		ops_rng_fill_u8(key, t->data, n, lo, hi);
		return 0;
	case OPS_S32: {
		/* uniform floats in [lo, hi + 1) floored: integers in [lo, hi] */
		float *tmp = malloc(n ? n * sizeof *tmp : 1);
		int32_t *d = t->data;
		if (!tmp)
			return opr_error_set(err, OPR_ENOMEM, "out of memory filling tensor '%s'",
					     t->name);
		ops_rng_fill_f32(key, tmp, n, (float)lo, (float)hi + 1.0f);
		for (size_t i = 0; i < n; i++) {
			double v = floor((double)tmp[i]);
			d[i] = (int32_t)(v > hi ? hi : v < lo ? lo : v);
		}
		free(tmp);
		return 0;
	}
	default:
		return opr_error_set(err, OPR_EINTERNAL, "tensor '%s' is not an integer tensor",
				     t->name);
	}
}

int ops_instance_add_tensor(struct ops_instance *inst, const char *name,
			    enum ops_dtype t, int64_t count, int is_output,
			    double fill_lo, double fill_hi, struct opr_error *err)
{
	struct ops_tensor *ts;
	size_t es, bytes;
	int rc;

	if (inst->nt >= OPS_MAX_TENSORS)
		return opr_error_set(err, OPR_EINTERNAL, "too many tensors (tensor '%s')", name);
	if ((int)t < 0 || t >= OPS_NDTYPES)
		return opr_error_set(err, OPR_EINTERNAL, "tensor '%s' has no dtype", name);
	if (strlen(name) >= sizeof ts->name)
		return opr_error_set(err, OPR_EINTERNAL, "tensor name '%s' is too long", name);
	es = ops_dtype_size(t);
	if (count < 0 || (uint64_t)count > (SIZE_MAX - 64) / es)
		return opr_error_set(err, OPR_ELIMIT, "tensor '%s' of %lld elements is too large",
				     name, (long long)count);
	ts = &inst->t[inst->nt];
	memset(ts, 0, sizeof *ts);
	snprintf(ts->name, sizeof ts->name, "%s", name);
	ts->dtype = t;
	ts->count = count;
	ts->is_output = is_output;
	if (inst->dry) {
		inst->nt++;
		return inst->nt - 1;
	}
	/* at least one cache line, so a real tensor never has NULL data */
	bytes = (size_t)count * es;
	bytes = bytes ? (bytes + 63) / 64 * 64 : 64;
	ts->data = ops_host_alloc(bytes);
	if (!ts->data)
		return opr_error_set(err, OPR_ENOMEM, "out of memory for tensor '%s' (%zu bytes)",
				     name, bytes);
	memset(ts->data, 0xFF, bytes);
	inst->nt++;
	if (fill_lo < fill_hi) {
		uint64_t key = ops_rng_key(inst->seed, inst->block, name);
		if (t == OPS_F32 || t == OPS_F16 || t == OPS_BF16)
			rc = fill_float(ts, key, (float)fill_lo, (float)fill_hi, err);
		else
			rc = fill_int(ts, key, (int)fill_lo, (int)fill_hi, err);
		if (rc < 0)
			return rc; /* the tensor stays in inst and is freed with it */
	}
	return inst->nt - 1;
}

struct ops_tensor *ops_instance_tensor(struct ops_instance *inst, const char *name)
{
	for (int i = 0; i < inst->nt; i++)
		if (!strcmp(inst->t[i].name, name))
			return &inst->t[i];
	return NULL;
}

int ops_instance_input_changed(struct ops_instance *inst, const char *name,
			       struct opr_error *err)
{
	struct ops_tensor *t = ops_instance_tensor(inst, name);

	if (!t || t->is_output)
		return opr_error_set(err, OPR_EINPUT, "the instance has no input '%s'", name);
	t->version++;
	return 0;
}

static int instance_exec(struct ops_device *dev, struct ops_instance *inst, int poison,
			 struct opr_error *err)
{
	const struct ops_group_impl *impl;
	int rc, dry = ops_device_dry_run(dev);

	if ((rc = impl_of(&inst->work, &impl, err)) < 0)
		return rc;
	if (inst->dry && !dry)
		return opr_error_set(err, OPR_EINTERNAL,
				     "a planning instance of '%s' can only run on a dry-run device",
				     ops_group_name(inst->work.group));
	/* a real run rewrites every output: poison them so a stale one fails */
	if (!dry && poison)
		for (int i = 0; i < inst->nt; i++)
			if (inst->t[i].is_output && inst->t[i].data)
				memset(inst->t[i].data, 0xFF,
				       (size_t)inst->t[i].count * ops_dtype_size(inst->t[i].dtype));
	return impl->run(dev, inst, err);
}

int ops_instance_run(struct ops_device *dev, struct ops_instance *inst,
		     struct opr_error *err)
{
	return instance_exec(dev, inst, 1, err);
}

int ops_instance_run_timed(struct ops_device *dev, struct ops_instance *inst,
			   struct opr_error *err)
{
	return instance_exec(dev, inst, 0, err);
}

const void *ops_instance_output(const struct ops_instance *inst, size_t *bytes)
{
	const struct ops_tensor *t = &inst->t[inst->out_index];
	if (bytes)
		*bytes = (size_t)t->count * ops_dtype_size(t->dtype);
	return t->data;
}

int ops_instance_quality(const struct ops_instance *inst, struct ops_quality *q,
			 struct opr_error *err)
{
	const struct ops_group_impl *impl;
	int rc;

	if ((rc = impl_of(&inst->work, &impl, err)) < 0)
		return rc;
	if (inst->dry)
		return opr_error_set(err, OPR_EINTERNAL, "a planning instance of '%s' has no output",
				     ops_group_name(inst->work.group));
	return impl->quality(inst, q, err);
}

uint64_t ops_workload_bytes(const struct ops_workload *w)
{
	const struct ops_group_impl *impl;
	if (impl_of(w, &impl, NULL) < 0)
		return 0;
	return impl->bytes(w);
}

/* ---- quality helper --------------------------------------------------------- */

static double elem_f64(enum ops_dtype t, const void *y, int64_t i)
{
	switch (t) {
	case OPS_F32:
		return ((const float *)y)[i];
	case OPS_F16:
		return ops_f16_to_f32(((const uint16_t *)y)[i]);
	case OPS_BF16:
		return ops_bf16_to_f32(((const uint16_t *)y)[i]);
	case OPS_S8:
		return ((const int8_t *)y)[i];
	case OPS_U8:
		return ((const uint8_t *)y)[i];
	case OPS_S32:
		return ((const int32_t *)y)[i];
	case OPS_NDTYPES:
		break;
	}
	return NAN;
}

/* ||y - ref||_2 / ||ref||_2; when ||ref|| is 0 the absolute ||y - ref|| (so
 * 0 when both are zero). A NaN anywhere in y gives NaN, which fails every
 * threshold comparison. */
double ops_rel_l2(enum ops_dtype t, const void *y, const double *ref, int64_t n)
{
	double num = 0.0, den = 0.0;
	for (int64_t i = 0; i < n; i++) {
		double d = elem_f64(t, y, i) - ref[i];
		num += d * d;
		den += ref[i] * ref[i];
	}
	return den > 0.0 ? sqrt(num / den) : sqrt(num);
}
