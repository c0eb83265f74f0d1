/* collect/gpu.c: a collection whose profile says `device: cuda`: the blocks'
 * baseline and candidate run on the GPU through the CUDA backend (ops/cuda/
 * in the build `make cuda` links; ops/cuda_none.c refuses in the plain one).
 * Samples are CUDA-event times of one run of the plan each (integer ns, the
 * L2 flushed before each), both variants in seeded randomised rounds under
 * the host's stopping rule; GPU counters come from PAPI's cuda component in
 * a counting pass of their own afterwards (collect/papi_cuda.c). The host
 * device model still runs each plan once for the simulated counters. */
#include "calibrate.h"
#include "../ops/cuda/cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GPU_ALT_SAMPLES 31 /* CUDA-event samples per measured alternative */

struct col_gpu_ctx {
	struct ops_cuda *cu;
};

struct col_gpu_inst {
	struct ops_cuda_inst *gi;
	struct ops_instance *inst; /* not owned */
};

int col_device_available(int kind)
{
	return kind == COL_DEV_HOST || (kind == COL_DEV_CUDA && ops_cuda_built());
}

int col_device_check(const struct col_profile *p, struct opr_error *err)
{
	if (col_device_available(p->device.kind))
		return 0;
	return opr_error_at(err, OPR_ENODEV, p->path, p->device.line, p->device.col,
			    "device cuda (index %d) needs the CUDA backend, which this opreview is "
			    "built without: build-cuda/opreview (`make cuda`) runs it",
			    p->device.index);
}

/* The NVIDIA kernel module's version, as /proc/driver/nvidia/version says
 * ("NVRM version: NVIDIA UNIX ... Kernel Module  580.159.03  ..."). */
static void kernel_driver(char *buf, size_t len)
{
	char line[512];
	FILE *fp = fopen("/proc/driver/nvidia/version", "r");
	snprintf(buf, len, "unavailable: no /proc/driver/nvidia/version");
	if (!fp)
		return;
	if (fgets(line, sizeof line, fp)) {
		const char *k = strstr(line, "Kernel Module");
		char v[64];
		if (k && sscanf(k + strlen("Kernel Module"), " %63s", v) == 1)
			snprintf(buf, len, "%s", v);
	}
	fclose(fp);
}

int col_gpu_open(struct col_run *run, struct col_gpu_ctx **out, struct opr_error *err)
{
	struct col_gpu_ctx *g;
	int rc;

	*out = NULL;
	if ((rc = col_device_check(run->profile, err)))
		return rc;
	g = calloc(1, sizeof *g);
	if (!g)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	if ((rc = ops_cuda_new(run->profile->device.index, &g->cu, err))) {
		free(g);
		if (rc != OPR_EIO)
			return rc;
		/* no usable GPU is the device's absence, not an I/O failure (the
		 * message is copied: err->msg is also the destination) */
		char why[sizeof err->msg];
		snprintf(why, sizeof why, "%s", err ? err->msg : "not usable");
		return opr_error_at(err, OPR_ENODEV, run->profile->path, run->profile->device.line,
				    run->profile->device.col, "device cuda (index %d): %s",
				    run->profile->device.index, why);
	}
	const struct ops_cuda_info *in = ops_cuda_info(g->cu);
	struct col_gpu *d = &run->gpu;
	memset(d, 0, sizeof *d);
	d->present = 1;
	d->index = in->device;
	snprintf(d->name, sizeof d->name, "%s", in->name);
	d->cc_major = in->cc_major;
	d->cc_minor = in->cc_minor;
	d->sm_count = in->sm_count;
	d->sm_clock_khz = in->clock_khz;
	d->mem_clock_khz = in->mem_clock_khz;
	d->l2_bytes = (int64_t)in->l2_bytes;
	d->shared_per_block_optin = (int64_t)in->shared_per_block_optin;
	d->global_bytes = (int64_t)in->global_bytes;
	d->driver_version = in->driver_version;
	d->runtime_version = in->runtime_version;
	d->l2_flush = 1;
	kernel_driver(d->kernel_driver, sizeof d->kernel_driver);
	if (col_papi_version(d->papi_version, sizeof d->papi_version))
		snprintf(d->papi_version, sizeof d->papi_version, "unknown");
	*out = g;
	return 0;
}

void col_gpu_close(struct col_gpu_ctx *g)
{
	if (!g)
		return;
	ops_cuda_free(g->cu);
	free(g);
}

void col_gpu_inst_free(struct col_gpu_inst *gi)
{
	if (!gi)
		return;
	ops_cuda_inst_free(gi->gi);
	free(gi);
}

int col_gpu_prepare(struct col_gpu_ctx *g, struct ops_instance *inst, struct col_variant_run *vr,
		    struct col_gpu_inst **out, struct opr_error *err)
{
	struct col_gpu_inst *gi = calloc(1, sizeof *gi);
	int rc;

	*out = NULL;
	if (!gi)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	gi->inst = inst;
	if ((rc = ops_cuda_inst_new(g->cu, inst, &gi->gi, err)) ||
	    (rc = ops_cuda_inst_run_checked(gi->gi, err)) ||
	    (rc = ops_instance_quality(inst, &vr->quality, err)))
		goto fail;
	size_t bytes;
	const void *y = ops_instance_output(inst, &bytes);
	col_sha256_hex(y, bytes, vr->output_sha256);
	*out = gi;
	return 0;
fail:
	col_gpu_inst_free(gi);
	return rc;
}

/* ---- the counting pass -------------------------------------------------------- */

struct count_ctx {
	struct ops_cuda *cu;
	struct ops_cuda_inst *gi;
};

/* Before each counted run: the L2 flushed, as before each timed sample. */
static int count_prepare(void *ctx, struct opr_error *err)
{
	struct count_ctx *c = ctx;
	int rc = ops_cuda_flush_l2(c->cu, err);
	return rc ? rc : ops_cuda_sync(c->cu, err);
}

static int count_run(void *ctx, struct opr_error *err)
{
	struct count_ctx *c = ctx;
	int rc = ops_cuda_inst_launch(c->gi, err);
	return rc ? rc : ops_cuda_sync(c->cu, err);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int count_variant(struct col_run *run, struct col_gpu_ctx *g, struct col_variant_run *vr,
			 struct col_gpu_inst *gi, struct opr_error *err)
{
	const char *const *names = col_gpu_default_events();
	size_t n = 0;
	while (names[n])
		n++;
	vr->gpu_counters = calloc(n ? n : 1, sizeof *vr->gpu_counters);
	if (!vr->gpu_counters)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	vr->ngpu_counters = n;
	struct count_ctx c = {g->cu, gi->gi};
	int rc = col_gpu_count(names, n, count_prepare, count_run, &c, vr->gpu_counters, err);
	if (rc)
		return rc;
	/* the SM clock seen: the slowest SM's elapsed cycles over the median time */
	for (size_t i = 0; i < n && vr->nsamples; i++) {
		if (!vr->gpu_counters[i].available || !strstr(names[i], "sm__cycles_elapsed"))
			continue;
		int64_t *s = malloc(vr->nsamples * sizeof *s);
		if (!s)
			return opr_error_set(err, OPR_ENOMEM, "out of memory");
		memcpy(s, vr->samples_ns, vr->nsamples * sizeof *s);
		qsort(s, vr->nsamples, sizeof *s, cmp_i64);
		double med = (double)s[vr->nsamples / 2];
		free(s);
		if (med <= 0)
			continue;
		double mhz = (double)vr->gpu_counters[i].value / med * 1e3;
		struct col_gpu *d = &run->gpu;
		if (d->clock_seen_mhz_min == 0 || mhz < d->clock_seen_mhz_min)
			d->clock_seen_mhz_min = mhz;
		if (mhz > d->clock_seen_mhz_max)
			d->clock_seen_mhz_max = mhz;
	}
	return 0;
}

/* ---- sampling ------------------------------------------------------------------ */

int col_gpu_sample(struct col_run *run, struct col_gpu_ctx *g, struct col_block_run *br,
		   struct col_gpu_inst *gi[2], double budget_s, int progress, uint64_t *rng,
		   struct opr_error *err)
{
	const struct col_profile *p = run->profile;
	size_t cap[2] = {0, 0}, scratch_cap = 0;
	int64_t *scratch = NULL;
	int rc = 0, round = 0;
	double ns[2];

	/* warm-up: module load, first-touch of the device buffers, clocks up */
	struct ops_cuda_inst *both[2] = {gi[0]->gi, gi[1]->gi};
	for (int w = 0; w < 3 && !rc; w++)
		rc = ops_cuda_time(g->cu, both, 2, 1, 1, ns, err);
	if (rc)
		return rc;
	br->reps_per_round = 1;
	br->v[0].events_per_sample = br->v[1].events_per_sample = 0;
	for (int v = 0; v < 2; v++) {
		br->v[v].event_totals = calloc(run->nevents ? run->nevents : 1, sizeof(long long));
		if (!br->v[v].event_totals)
			return opr_error_set(err, OPR_ENOMEM, "out of memory");
	}
	const int64_t need = col_samples_needed(p);
	const int64_t deadline = opr_now_ns() + (int64_t)(budget_s * 1e9);
	for (;;) {
		int first = (int)(ops_splitmix64(rng) & 1); /* randomised A B / B A */
		struct ops_cuda_inst *order[2] = {gi[first]->gi, gi[1 - first]->gi};
		if ((rc = ops_cuda_time(g->cu, order, 2, 1, 1, ns, err)))
			goto out;
		for (int k = 0; k < 2; k++) {
			int v = k ? 1 - first : first;
			if ((rc = col_sample_push(&br->v[v], &cap[v], (int64_t)llround(ns[k]), round, err)))
				goto out;
		}
		round++;
		int64_t t = opr_now_ns();
		if (progress && round % 64 == 0)
			fprintf(stderr, "\ropreview: %-24s baseline %6zu  candidate %6zu samples (GPU) ",
				br->block->name, br->v[0].nsamples, br->v[1].nsamples);
		if ((int64_t)br->v[0].nsamples >= p->budget.max_samples &&
		    (int64_t)br->v[1].nsamples >= p->budget.max_samples) {
			snprintf(br->stop_reason, sizeof br->stop_reason, "max_samples %lld reached",
				 (long long)p->budget.max_samples);
			break;
		}
		if (round % 4 == 0) {
			int e0 = col_p95_ci_enough(&br->v[0], need, &scratch, &scratch_cap, err);
			int e1 = e0 > 0 ? col_p95_ci_enough(&br->v[1], need, &scratch, &scratch_cap, err) : e0;
			if (e0 < 0 || e1 < 0) {
				rc = e0 < 0 ? e0 : e1;
				goto out;
			}
			if (e0 && e1) {
				snprintf(br->stop_reason, sizeof br->stop_reason,
					 "p95 95%% CI within +-2%% with >= %lld samples per variant",
					 (long long)need);
				break;
			}
		}
		if (t >= deadline) {
			snprintf(br->stop_reason, sizeof br->stop_reason,
				 (int64_t)br->v[0].nsamples < 368 || (int64_t)br->v[1].nsamples < 368
					 ? "budget spent before 368 samples per variant: too few for a p99 claim"
					 : "budget spent before p95's CI reached +-2%%");
			break;
		}
	}
	if (progress)
		fprintf(stderr, "\r%90s\r", "");
	br->nrounds = round;
	/* the counting pass, never while timing; then the output once more */
	for (int v = 0; v < 2 && !rc; v++)
		rc = count_variant(run, g, &br->v[v], gi[v], err);
	for (int v = 0; v < 2 && !rc; v++) {
		char d[65];
		size_t bytes;
		if ((rc = ops_cuda_inst_run_checked(gi[v]->gi, err)))
			break;
		const void *y = ops_instance_output(gi[v]->inst, &bytes);
		col_sha256_hex(y, bytes, d);
		br->v[v].repro_output_stable = !strcmp(d, br->v[v].output_sha256);
	}
out:
	free(scratch);
	return rc;
}

/* ---- the planner's alternatives on the GPU ------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int col_gpu_measure_alts(const struct col_profile *p, struct col_gpu_ctx *g,
			 const struct col_block *b, struct col_variant_run *vr,
			 struct opr_error *err)
{
	enum { ALT_MAX = COL_MEASURED_ALTS + 1 };
	size_t idx[ALT_MAX];
	struct ops_instance *inst[ALT_MAX] = {NULL};
	struct ops_cuda_inst *gi[ALT_MAX] = {NULL};
	double *ns = NULL;
	int n = 0, fitting = 0, rc = 0;

	vr->alt_measured_ns = malloc((vr->nalts ? vr->nalts : 1) * sizeof *vr->alt_measured_ns);
	if (!vr->alt_measured_ns)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	for (size_t i = 0; i < vr->nalts; i++)
		vr->alt_measured_ns[i] = NAN;
	if (!p->calibration.present || p->calibration.device != COL_DEV_CUDA)
		return 0;
	for (size_t i = 0; i < vr->nalts && n < ALT_MAX; i++) {
		const struct ops_plan_eval *e = &vr->alts[i];
		if (!e->fits)
			continue;
		int top = fitting++ < COL_MEASURED_ALTS;
		if (top || ops_plan_equal(&e->plan, &vr->plan))
			idx[n++] = i;
	}
	for (int k = 0; k < n && !rc; k++) {
		rc = ops_instance_new(&b->work, &vr->alts[idx[k]].plan, p->seed, b->name, &inst[k], err);
		if (!rc)
			rc = ops_cuda_inst_new(g->cu, inst[k], &gi[k], err);
	}
	if (!rc && n > 0) {
		ns = malloc((size_t)n * GPU_ALT_SAMPLES * sizeof *ns);
		if (!ns)
			rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
	}
	/* one untimed round, then rounds rotating the order (A B C, B C A, ...) */
	if (!rc && n > 0)
		rc = ops_cuda_time(g->cu, gi, n, 1, 1, ns, err);
	if (!rc && n > 0)
		rc = ops_cuda_time(g->cu, gi, n, GPU_ALT_SAMPLES, 1, ns, err);
	for (int k = 0; k < n && !rc; k++) {
		double *s = ns + (size_t)k * GPU_ALT_SAMPLES;
		qsort(s, GPU_ALT_SAMPLES, sizeof *s, cmp_double);
		vr->alt_measured_ns[idx[k]] = s[GPU_ALT_SAMPLES / 2];
	}
	for (int k = 0; k < n; k++) {
		ops_cuda_inst_free(gi[k]);
		ops_instance_free(inst[k]);
	}
	free(ns);
	return rc;
}

/* ---- calibrate --device cuda ---------------------------------------------------- */

static void utc_now(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Each probe, the calibration key it gives and, where the envelope takes
 * it, the term it sets. */
static const struct {
	enum ops_cuda_probe p;
	const char *key;
} gpu_probes[] = {
	{OPS_CUDA_P_COPY, "global_bandwidth_gbps"},
	{OPS_CUDA_P_L2, "l2_bandwidth_gbps"},
	{OPS_CUDA_P_SHARED, "shared_bandwidth_gbps"},
	{OPS_CUDA_P_FP32, "fp32_tops"},
	{OPS_CUDA_P_FP16, "fp16_tops"},
	{OPS_CUDA_P_BF16, "bf16_tops"},
	{OPS_CUDA_P_INT8, "int8_tops"},
	{OPS_CUDA_P_INT8_MMA, "int8_mma_tops"},
	{OPS_CUDA_P_VECTOR, "vector_tops"},
	{OPS_CUDA_P_VECTOR_HALF, "vector_half_tops"},
	{OPS_CUDA_P_LATENCY, "dma_setup_ns"},
	{OPS_CUDA_P_LAUNCH_FIRST, "launch_first_us"},
	{OPS_CUDA_P_LAUNCH_NEXT, "launch_overhead_us"},
};

/* ---- our own kernels, per family --------------------------------------------
 * The probes above give peaks; the review runs our kernels, which reach a
 * fraction of them (the conv direct kernel's threads each run a chain of
 * FMAs on shared-memory operands; qgemm streams B at about half the copy
 * rate; the row-copy permute spends its time on index
 * arithmetic). As the host's calibrate times its own kernels for the rates
 * its envelope carries, each family's fused kernel is timed here the way the
 * review times a sample (L2 flushed, CUDA events, the two plans interleaved)
 * on a workload of its own, and its cost is what makes the model (ops/model.c,
 * ops_envelope.kern) give those times:
 *   T_i - launch_first = efficiency * B_i + transfer_ns * X_i
 * B_i: the launch's body at the probes' peaks (efficiency 1), X_i: the loads
 * from GLOBAL of its busiest SM, both from the model of plan i. The planner's
 * first fitting plan of the family's strategy on the peak envelope and its
 * next fitting plans (six kernels; plans that differ only in buffering are
 * one kernel on the GPU) are timed and fitted by least squares on the
 * relative error, sum ((T_i - model_i) / T_i)^2: the absolute error let the
 * longest plans decide, and the qgemm fit over six plans that way gave the
 * decode block 29-59% errors where its own two plans alone said 10%. The
 * per-load term is kept where it earns its place: where the two-term fit's
 * worst relative residual is under 0.8 of the one-term fit's (a kernel that
 * waits for each tile's load: the transposing permute; the element-wise
 * kernel at small tiles: tile_elems 1024 took 31.0 us where 4096 took 18.8
 * on the same bytes), else transfer_ns is 0 with efficiency the one-term fit. */
struct gpu_kern {
	enum ops_kernel_class f;
	int strategy;              /* the plans' strategy, or -1: the planner's first */
	const char *what;          /* the workload, for the method text */
};
static const struct gpu_kern gpu_kerns[OPS_NKCLASSES] = {
	{OPS_KC_CONV, OPS_STRAT_DIRECT, "conv2d+bias+relu fp16 [1,64,56,56] k64 3x3 fused"},
	{OPS_KC_QGEMM, -1, "qgemm+dequant+bias+gelu-tanh u8 x s8 8x64x1048576 fused"},
	{OPS_KC_PERMUTE, -1, "permute+silu bf16 [64,65536] (1,0) fused"},
	{OPS_KC_PERMUTE_ROWS, -1, "permute+silu fp16 [4,128,16,128] (0,2,1,3) fused"},
	{OPS_KC_ELEMENTWISE, -1, "silu bf16 [16,1048576]"},
	{OPS_KC_CONV_GEMM, OPS_STRAT_IM2COL,
	 "conv2d+bias+relu fp16 [1,64,56,56] k64 3x3 fused, implicit GEMM"},
};

static void kern_workload(enum ops_kernel_class f, struct ops_workload *w)
{
	memset(w, 0, sizeof *w);
	switch (f) {
	case OPS_KC_CONV:
	case OPS_KC_CONV_GEMM: {
		/* the ResNet stage-2 shape: the direct kernel's speed follows its
		 * block's thread count (tile_oh x tile_ow), which the model does
		 * not see, and at smaller images the planner's tiles are rows of
		 * 28 threads that run 2x slower per MAC than its 4 x 28 tiles here */
		struct ops_conv_shape c = {1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1};
		w->group = OPS_G_CONV_BIAS_ACT;
		w->act = OPS_ACT_RELU;
		w->dtype = OPS_F16;
		w->conv = c;
		break;
	}
	case OPS_KC_QGEMM:
		/* N = 64, the kernel's full tile width (and the bench's shape): at
		 * N = 32 the planner's tile_n 32 blocks streamed half the bytes a
		 * second that tile_n 64 ones do (42 MB in 33.5 us against 75.5 MB
		 * in 37 us on the H200), a fixed cost that a per-byte efficiency
		 * fitted there carried to wider shapes as a 1.7-2x overestimate */
		w->group = OPS_G_QGEMM_DQ_BIAS_ACT;
		w->act = OPS_ACT_GELU_TANH;
		w->dtype = OPS_S8;
		w->gemm.m = 8;
		w->gemm.n = 64;
		w->gemm.k = 1048576;
		w->quant.a = OPS_U8;
		w->quant.a_zero_point = 3;
		w->quant.a_scale = 0.02f;
		w->quant.b_per_channel = 1;
		w->quant.out = OPS_F32;
		break;
	case OPS_KC_PERMUTE:
		w->group = OPS_G_PERMUTE_ACT;
		w->act = OPS_ACT_SILU;
		w->dtype = OPS_BF16;
		w->tensor.rank = 2;
		w->tensor.dims[0] = 64;
		w->tensor.dims[1] = 65536;
		w->tensor.perm[0] = 1;
		break;
	case OPS_KC_PERMUTE_ROWS: {
		static const int64_t d[4] = {4, 128, 16, 128};
		static const int pm[4] = {0, 2, 1, 3};
		w->group = OPS_G_PERMUTE_ACT;
		w->act = OPS_ACT_SILU;
		w->dtype = OPS_F16;
		w->tensor.rank = 4;
		memcpy(w->tensor.dims, d, sizeof d);
		memcpy(w->tensor.perm, pm, sizeof pm);
		break;
	}
	default:
		w->group = OPS_G_ACTIVATION;
		w->act = OPS_ACT_SILU;
		w->dtype = OPS_BF16;
		w->tensor.rank = 2;
		w->tensor.dims[0] = 16;
		w->tensor.dims[1] = 1048576;
		break;
	}
}

/* B and X of plan under env (see above), from dry-run evaluations: B the
 * body with family f at efficiency 1 (no transfer cost), X the transfers of
 * the core with the most (transfer_ns 1000 over a vanishing body), the core
 * that a transfer cost makes the slowest. */
static int kern_terms(const struct ops_envelope *env, enum ops_kernel_class f,
		      const struct ops_workload *w, const struct ops_plan *plan, double *b,
		      double *x, struct opr_error *err)
{
	static const double eff[4] = {1.0, 2.0, 1e-9, 1e-9}, tns[4] = {0, 0, 0, 1000.0};
	struct ops_envelope e = *env;
	struct ops_plan_eval ev;
	double t[4];
	for (int i = 0; i < 4; i++) {
		e.kern[f].efficiency = eff[i];
		e.kern[f].transfer_ns = tns[i];
		int rc = ops_plan_evaluate(&e, w, plan, &ev, err);
		if (rc)
			return rc;
		t[i] = ev.model_ns;
	}
	*b = t[1] - t[0];
	*x = (t[3] - t[2]) / 1000.0;
	return 0;
}

/* The worst |model_i / y_i - 1| of efficiency e and transfer_ns t. */
static double kern_worst(const double *b, const double *x, const double *y, int n, double e,
			 double t)
{
	double w = 0;
	for (int i = 0; i < n; i++)
		if (y[i] > 0)
			w = fmax(w, fabs((e * b[i] + t * x[i]) / y[i] - 1.0));
	return w;
}

/* efficiency and transfer_ns of the plans' bodies y (see gpu_kerns): least
 * squares on the relative error, i.e. on u = b / y, v = x / y against 1;
 * the per-load term only where it cuts the worst relative residual to
 * under 0.8 of the one-term fit's and both terms come out non-negative. */
static void kern_fit(const double *b, const double *x, const double *y, int n, double *eff,
		     double *tns)
{
	double suu = 0, suv = 0, svv = 0, su = 0, sv = 0;
	for (int i = 0; i < n; i++) {
		if (!(y[i] > 0)) /* (a body under the launch's cost: no information) */
			continue;
		const double u = b[i] / y[i], v = x[i] / y[i];
		suu += u * u;
		suv += u * v;
		svv += v * v;
		su += u;
		sv += v;
	}
	*eff = suu > 0 ? su / suu : 0;
	*tns = 0;
	const double det = suu * svv - suv * suv;
	if (n < 3 || !(det > 1e-12 * suu * svv))
		return;
	const double e2 = (su * svv - sv * suv) / det, t2 = (suu * sv - suv * su) / det;
	if (e2 > 0 && t2 >= 0 &&
	    kern_worst(b, x, y, n, e2, t2) < 0.8 * kern_worst(b, x, y, n, *eff, 0)) {
		*eff = e2;
		*tns = t2;
	}
}

#define GPU_KERN_SAMPLES 15
#define GPU_KERN_PLANS 6 /* the planner's top fitting plans of its strategy */

static int kern_calibrate(struct ops_cuda *cu, struct ops_envelope *env,
			  struct col_calibration *cal, const struct gpu_kern *k, int quick,
			  struct opr_error *err)
{
	struct ops_workload w;
	struct ops_plan_eval *alts = NULL;
	struct ops_instance *inst[GPU_KERN_PLANS] = {NULL};
	struct ops_cuda_inst *gi[GPU_KERN_PLANS] = {NULL};
	size_t nalts = 0;
	double b[GPU_KERN_PLANS], x[GPU_KERN_PLANS], y[GPU_KERN_PLANS], *ns = NULL;
	int pick[GPU_KERN_PLANS], np = 0, rc;
	const int samples = quick ? 5 : GPU_KERN_SAMPLES;

	kern_workload(k->f, &w);
	/* the plans are chosen on the envelope measured so far, this family
	 * at efficiency 1 (the peaks): the planner's first fitting plan and
	 * the next ones of the same strategy, as the review measures them */
	struct ops_envelope e = *env;
	e.kern[k->f].efficiency = 1.0;
	e.kern[k->f].transfer_ns = 0.0;
	if ((rc = ops_plan_search(&e, &w, w.group != OPS_G_ACTIVATION, &alts, &nalts, err)))
		goto out;
	int strat = k->strategy; /* -1 until the first fitting plan sets it */
	for (size_t i = 0; i < nalts && np < GPU_KERN_PLANS; i++) {
		if (!alts[i].fits || (strat >= 0 && (int)alts[i].plan.strategy != strat))
			continue;
		/* a plan that differs from one already taken only in its
		 * buffering is the same kernel on the GPU: not timed twice */
		int dup = 0;
		for (int j = 0; j < np && !dup; j++) {
			struct ops_plan q = alts[pick[j]].plan;
			q.double_buffer = alts[i].plan.double_buffer;
			dup = ops_plan_equal(&q, &alts[i].plan);
		}
		if (dup)
			continue;
		if ((rc = kern_terms(&e, k->f, &w, &alts[i].plan, &b[np], &x[np], err)))
			goto out;
		strat = (int)alts[i].plan.strategy;
		pick[np++] = (int)i;
	}
	if (np < 1) {
		rc = opr_error_set(err, OPR_EINTERNAL, "calibrate: no fitting plan for %s", k->what);
		goto out;
	}
	for (int i = 0; i < np && !rc; i++) {
		rc = ops_instance_new(&w, &alts[pick[i]].plan, 11, "calibrate", &inst[i], err);
		if (!rc)
			rc = ops_cuda_inst_new(cu, inst[i], &gi[i], err);
		if (!rc)
			rc = ops_cuda_inst_run_checked(gi[i], err); /* warm-up, module load */
	}
	if (rc)
		goto out;
	if (!(ns = malloc((size_t)np * samples * sizeof *ns))) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = ops_cuda_time(cu, gi, np, samples, 1, ns, err)))
		goto out;
	for (int i = 0; i < np; i++) {
		char key[32], method[COL_TEXT_MAX], d[160];
		double *s = ns + (size_t)i * samples;
		for (int j = 0; j < samples; j++)
			s[j] /= 1000.0;
		ops_plan_describe(w.group, &alts[pick[i]].plan, d, sizeof d);
		qsort(s, (size_t)samples, sizeof *s, cmp_double);
		y[i] = s[samples / 2] * 1000.0 - env->launch_first_us * 1000.0;
		/* the first two plans' times go into the calibration values (one
		 * plan alone gives efficiency y / b) */
		if (i > 1)
			continue;
		snprintf(key, sizeof key, "%s_%c_us", ops_kernel_class_name(k->f), 'a' + i);
		snprintf(method, sizeof method,
			 "%s, plan '%s' (of %d timed): CUDA events, L2 flushed, interleaved (model "
			 "at the peaks: body %.4g us, %.4g loads from GLOBAL on the busiest SM)",
			 k->what, d, np, b[i] / 1000.0, x[i]);
		col_cal_record(cal, key, s, samples, method);
	}
	double eff, tns;
	kern_fit(b, x, y, np, &eff, &tns);
	/* a kernel can be faster than the peaks' model (the L2 serving what
	 * the model prices at the HBM rate), never take no time */
	env->kern[k->f].efficiency = eff > 0.05 ? eff : 0.05;
	env->kern[k->f].transfer_ns = tns;
out:
	for (int i = 0; i < GPU_KERN_PLANS; i++) {
		ops_cuda_inst_free(gi[i]);
		ops_instance_free(inst[i]);
	}
	free(alts);
	free(ns);
	return rc;
}

#define GPU_CAL_SAMPLES 11
#define GPU_CAL_MAX_SAMPLES 32
#define GPU_INFLIGHT 64 /* warps an SM keeps resident (2048 threads / 32) */

int col_calibrate_gpu(const struct col_cal_options *o, int index, struct ops_envelope *env,
		      struct col_calibration *cal, struct opr_error *err)
{
	const int quick = o && o->quick, ns = quick ? 5 : GPU_CAL_SAMPLES;
	struct ops_cuda *cu = NULL;
	struct col_host host;
	double x[GPU_CAL_MAX_SAMPLES];
	int rc;

	memset(cal, 0, sizeof *cal);
	if ((rc = ops_cuda_new(index, &cu, err))) {
		/* no usable GPU is the device's absence (exit 6), not an I/O failure */
		if (rc == OPR_EIO) {
			rc = OPR_ENODEV;
			if (err)
				err->code = rc;
		}
		return rc;
	}
	const struct ops_cuda_info *in = ops_cuda_info(cu);
	col_host_detect(&host);
	snprintf(cal->host, sizeof cal->host, "%s", host.hostname[0] ? host.hostname : "unknown");
	snprintf(cal->cpu, sizeof cal->cpu, "%s", host.cpu_model);
	cal->cpus_online = host.cpus_online > 0 ? host.cpus_online : 1;
	cal->device = COL_DEV_CUDA;
	snprintf(cal->gpu, sizeof cal->gpu,
		 "%s, %d SMs, cc %d.%d, SM clock %d MHz, memory clock %d MHz, L2 %zu KiB, driver %d.%d, "
		 "CUDA runtime %d.%d", in->name, in->sm_count, in->cc_major, in->cc_minor,
		 in->clock_khz / 1000, in->mem_clock_khz / 1000, in->l2_bytes >> 10,
		 in->driver_version / 1000, in->driver_version % 1000 / 10, in->runtime_version / 1000,
		 in->runtime_version % 1000 / 10);
	utc_now(cal->date, sizeof cal->date);
	/* cores, SHARED capacity, clock and HBM capacity from the device */
	ops_cuda_envelope(cu, env);
	snprintf(env->name, sizeof env->name, "%s", o && o->name ? o->name : "gpu");
	for (size_t i = 0; i < sizeof gpu_probes / sizeof *gpu_probes; i++) {
		if ((rc = ops_cuda_probe(cu, gpu_probes[i].p, quick, ns, x, err)))
			goto out;
		col_cal_record(cal, gpu_probes[i].key, x, ns, ops_cuda_probe_method(gpu_probes[i].p));
	}
	env->global_bw_gbps = col_cal_find(cal, "global_bandwidth_gbps")->median;
	env->shared_bw_gbps = col_cal_find(cal, "shared_bandwidth_gbps")->median;
	env->tops[OPS_F32] = col_cal_find(cal, "fp32_tops")->median;
	env->tops[OPS_F16] = col_cal_find(cal, "fp16_tops")->median;
	env->tops[OPS_BF16] = col_cal_find(cal, "bf16_tops")->median;
	env->tops[OPS_S8] = env->tops[OPS_U8] = env->tops[OPS_S32] =
		col_cal_find(cal, "int8_tops")->median;
	env->vector_tops = col_cal_find(cal, "vector_tops")->median;
	env->vector_half_tops = col_cal_find(cal, "vector_half_tops")->median;
	env->launch_overhead_us = col_cal_find(cal, "launch_overhead_us")->median;
	env->launch_first_us = col_cal_find(cal, "launch_first_us")->median;
	env->dma_setup_ns = col_cal_find(cal, "dma_setup_ns")->median;
	env->dma_engines = GPU_INFLIGHT;
	env->dma_serial = 0;
	for (int f = 0; f < OPS_NKCLASSES && !rc; f++)
		rc = kern_calibrate(cu, env, cal, &gpu_kerns[f], quick, err);
	if (rc)
		goto out;
	cal->present = 1;
	for (int i = 0; i < cal->nv && !rc; i++)
		if (!(cal->v[i].median > 0) || !isfinite(cal->v[i].median))
			rc = opr_error_set(err, OPR_EINTERNAL, "calibration of '%s' gave %g",
					   cal->v[i].key, cal->v[i].median);
out:
	ops_cuda_free(cu);
	return rc;
}

/* ---- the pipeline on the device ------------------------------------------------ */

int col_gpu_launch_times(struct col_gpu_ctx *g, struct col_gpu_inst *gi,
			 struct col_variant_run *vr, struct opr_error *err)
{
	double ns[COL_PIPE_MAX_LAUNCHES > 256 ? 256 : COL_PIPE_MAX_LAUNCHES];
	int n = 0;
	int rc = ops_cuda_inst_launch_times(gi->gi, g->cu, COL_GPU_LAUNCH_SAMPLES, ns,
					    (int)(sizeof ns / sizeof *ns), &n, err);
	if (rc)
		return rc;
	free(vr->dev_launch_ns);
	vr->dev_launch_ns = malloc((size_t)(n > 0 ? n : 1) * sizeof *vr->dev_launch_ns);
	if (!vr->dev_launch_ns)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	memcpy(vr->dev_launch_ns, ns, (size_t)n * sizeof *ns);
	vr->ndev_launch = (size_t)n;
	return 0;
}

static double nearest_rank(double *x, size_t n, double q)
{
	qsort(x, n, sizeof *x, cmp_double);
	return opr_quantile_nearest_rank(x, n, q);
}

int col_gpu_replay(struct col_gpu_ctx *g, struct ops_instance *inst, struct col_variant_run *vr,
		   struct opr_error *err)
{
	struct col_replay *rp = &vr->replay;
	const struct col_pipe_result *p = &vr->pipe;
	struct ops_cuda_replay_job *jobs = NULL;
	double *start = NULL, *end = NULL, *lat = NULL, *wait = NULL, *sim = NULL;
	struct opr_error e2 = {0};
	int rc = 0;

	memset(rp, 0, sizeof *rp);
	rp->state = COL_REPLAY_UNAVAILABLE;
	if (!p->job_close_ns || !p->job_of || !p->arrival_ns || p->jobs < 1) {
		snprintf(rp->reason, sizeof rp->reason, "the simulation kept no arrival trace");
		return 0;
	}
	/* the jobs (in close order) up to COL_REPLAY_MAX_REQUESTS requests */
	int64_t nj = 0, nreq = 0;
	while (nj < p->jobs && nreq < COL_REPLAY_MAX_REQUESTS)
		nreq += p->job_b[nj++];
	jobs = malloc((size_t)nj * sizeof *jobs);
	start = malloc((size_t)nj * sizeof *start);
	end = malloc((size_t)nj * sizeof *end);
	lat = malloc((size_t)nreq * sizeof *lat);
	wait = malloc((size_t)nreq * sizeof *wait);
	sim = malloc((size_t)nreq * 3 * sizeof *sim);
	if (!jobs || !start || !end || !lat || !wait || !sim) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory for the replay");
		goto out;
	}
	for (int64_t j = 0; j < nj; j++) {
		jobs[j].issue_ns = p->job_close_ns[j];
		jobs[j].stream = p->job_stream[j];
		jobs[j].runs = p->job_b[j];
	}
	if ((rc = ops_cuda_replay(g ? g->cu : NULL, inst, p->streams, jobs, (size_t)nj, start, end,
				  &e2))) {
		/* the device's absence or failure: said, never replaced by a number */
		snprintf(rp->reason, sizeof rp->reason, "%s", e2.msg);
		rc = 0;
		goto out;
	}
	/* every request of the replayed jobs: arrival -> its job's end (start) */
	int64_t k = 0;
	double first = INFINITY, last = 0, lsum = 0, wsum = 0;
	double *simlat = sim, *simwait = sim + nreq, *simw2 = sim + 2 * nreq;
	for (int64_t r = 0; r < p->n && k < nreq; r++) {
		int64_t j = p->job_of[r];
		if (j < 0 || j >= nj)
			continue;
		lat[k] = end[j] - p->arrival_ns[r];
		wait[k] = start[j] - p->arrival_ns[r];
		simlat[k] = p->latency_ns[r];
		simwait[k] = p->wait_ns[r];
		simw2[k] = p->wait_ns[r];
		lsum += lat[k];
		wsum += wait[k];
		first = fmin(first, p->arrival_ns[r]);
		last = fmax(last, end[j]);
		k++;
	}
	rp->n = k;
	rp->jobs = nj;
	rp->streams = p->streams;
	rp->mean_ns = lsum / (double)k;
	rp->wait_mean_ns = wsum / (double)k;
	rp->p50_ns = nearest_rank(lat, (size_t)k, 0.50);
	rp->p95_ns = opr_quantile_nearest_rank(lat, (size_t)k, 0.95);
	rp->p99_ns = opr_quantile_nearest_rank(lat, (size_t)k, 0.99);
	rp->max_ns = lat[k - 1];
	rp->wait_p50_ns = nearest_rank(wait, (size_t)k, 0.50);
	rp->wait_p95_ns = opr_quantile_nearest_rank(wait, (size_t)k, 0.95);
	rp->wait_p99_ns = opr_quantile_nearest_rank(wait, (size_t)k, 0.99);
	rp->throughput_rps = last > first ? (double)k / (last - first) * 1e9 : NAN;
	double ws = 0;
	for (int64_t i = 0; i < k; i++)
		ws += simw2[i];
	rp->sim_wait_mean_ns = ws / (double)k;
	rp->sim_p50_ns = nearest_rank(simlat, (size_t)k, 0.50);
	rp->sim_p95_ns = opr_quantile_nearest_rank(simlat, (size_t)k, 0.95);
	rp->sim_p99_ns = opr_quantile_nearest_rank(simlat, (size_t)k, 0.99);
	rp->sim_wait_p95_ns = nearest_rank(simwait, (size_t)k, 0.95);
	rp->state = COL_REPLAY_MEASURED;
out:
	free(jobs);
	free(start);
	free(end);
	free(lat);
	free(wait);
	free(sim);
	return rc;
}
