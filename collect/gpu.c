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
	{OPS_CUDA_P_LAUNCH, "launch_overhead_us"},
	{OPS_CUDA_P_LATENCY, "dma_setup_ns"},
};

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
	env->dma_setup_ns = col_cal_find(cal, "dma_setup_ns")->median;
	env->dma_engines = GPU_INFLIGHT;
	env->dma_serial = 0;
	cal->present = 1;
	for (int i = 0; i < cal->nv && !rc; i++)
		if (!(cal->v[i].median > 0) || !isfinite(cal->v[i].median))
			rc = opr_error_set(err, OPR_EINTERNAL, "calibration of '%s' gave %g",
					   cal->v[i].key, cal->v[i].median);
out:
	ops_cuda_free(cu);
	return rc;
}
