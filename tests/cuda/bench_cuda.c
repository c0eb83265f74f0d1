/* tests/cuda/bench_cuda.c: the CUDA backend's benchmark on the GPU host:
 * the copy reference, the target shapes and the fused groups
 * (unfused and fused interleaved), each checked against the reference, timed
 * with CUDA events (L2 flushed between samples unless --warm), then counted
 * in a pass of its own through PAPI's cuda component beside the simulated
 * GLOBAL bytes of the same plan on the device's envelope.
 *
 * usage: bench_cuda [--warm] [--samples N] OUTDIR
 * writes OUTDIR/bench.tsv (one row per variant), OUTDIR/counters.tsv and
 * OUTDIR/device.json, and prints the tables. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../collect/collect.h"
#include "../../ops/cuda/cuda.h"

static struct ops_cuda *cu;
static struct ops_envelope env;
static int samples = 30, flush = 1;
static FILE *tsv, *ctsv;

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double quantile(double *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	double pos = q * (n - 1);
	int i = (int)pos;
	return i + 1 < n ? v[i] + (pos - i) * (v[i + 1] - v[i]) : v[i];
}

struct variant {
	const char *name;
	struct ops_workload w;
	struct ops_plan plan;
	int use_planner;          /* plan from ops_plan_resolve on the device envelope */
	struct ops_instance *inst;
	struct ops_cuda_inst *gi;
	struct ops_quality q;
	double p50, p95;
	char plan_text[192];
};

static int die(const struct opr_error *err)
{
	fprintf(stderr, "bench_cuda: %s\n", err->msg);
	exit(1);
}

static void prepare(struct variant *v)
{
	struct opr_error err = { 0 };
	char reason[256];
	int fb = 0;

	if (v->use_planner &&
	    ops_plan_resolve(&env, &v->w, NULL, v->plan.fused, &v->plan, &fb, reason, sizeof reason,
			     &err) < 0)
		die(&err);
	ops_plan_describe(v->w.group, &v->plan, v->plan_text, sizeof v->plan_text);
	if (ops_instance_new(&v->w, &v->plan, 2026, v->name, &v->inst, &err) < 0 ||
	    ops_cuda_inst_new(cu, v->inst, &v->gi, &err) < 0 ||
	    ops_cuda_inst_run_checked(v->gi, &err) < 0 ||
	    ops_instance_quality(v->inst, &v->q, &err) < 0)
		die(&err);
}

static int cnt_prepare(void *ctx, struct opr_error *err)
{
	(void)ctx;
	if (ops_cuda_flush_l2(cu, err) < 0)
		return -1;
	return ops_cuda_sync(cu, err);
}

static int cnt_run(void *ctx, struct opr_error *err)
{
	struct variant *v = ctx;
	int rc = ops_cuda_inst_launch(v->gi, err);
	return rc < 0 ? rc : ops_cuda_sync(cu, err);
}

/* Simulated GLOBAL bytes of the plan on the device envelope (dry run);
 * 0 when the plan does not fit the envelope (why: in reason). */
static int simulated(const struct variant *v, uint64_t *rd, uint64_t *wr, char *reason, size_t len)
{
	struct opr_error err = { 0 };
	struct ops_plan_eval ev;

	*rd = *wr = 0;
	if (ops_plan_evaluate(&env, &v->w, &v->plan, &ev, &err) < 0)
		die(&err);
	if (!ev.fits) {
		snprintf(reason, len, "the model rejects the plan: %s", ev.reason);
		return 0;
	}
	for (int s = 0; s < OPS_NSPACES; s++) {
		if (s == OPS_GLOBAL)
			continue;
		*rd += ev.counters.bytes[OPS_GLOBAL][s];
		*wr += ev.counters.bytes[s][OPS_GLOBAL];
	}
	return 1;
}

/* The counting pass of one variant: every default GPU event, the
 * simulated bytes beside the DRAM and SM<->L2 bytes. */
static void count(const char *label, struct variant *v)
{
	struct opr_error err = { 0 };
	const char *const *names = col_gpu_default_events();
	struct col_gpu_counter c[16];
	size_t n = 0;
	uint64_t srd, swr;

	while (names[n])
		n++;
	if (col_gpu_count(names, n, cnt_prepare, cnt_run, v, c, &err) < 0)
		die(&err);
	char why[256] = "";
	int sim = simulated(v, &srd, &swr, why, sizeof why);
	for (size_t i = 0; i < n; i++) {
		if (c[i].available)
			fprintf(ctsv, "%s\t%s\t%s\tpapi\t%lld\t\n", label, v->name, c[i].name, c[i].value);
		else
			fprintf(ctsv, "%s\t%s\t%s\tunavailable\t\t%s\n", label, v->name, c[i].name,
				c[i].reason);
	}
	if (sim) {
		fprintf(ctsv, "%s\t%s\tGLOBAL_READ_BYTES\tsimulated\t%llu\t\n", label, v->name,
			(unsigned long long)srd);
		fprintf(ctsv, "%s\t%s\tGLOBAL_WRITE_BYTES\tsimulated\t%llu\t\n", label, v->name,
			(unsigned long long)swr);
	} else {
		fprintf(ctsv, "%s\t%s\tGLOBAL_READ_BYTES\tunavailable\t\t%s\n", label, v->name, why);
		fprintf(ctsv, "%s\t%s\tGLOBAL_WRITE_BYTES\tunavailable\t\t%s\n", label, v->name, why);
	}
	long long dr = c[0].available ? c[0].value : -1, dw = c[1].available ? c[1].value : -1;
	long long lr = c[2].available ? c[2].value * 32 : -1, lw = c[3].available ? c[3].value * 32 : -1;
	printf("  counters %-28s sim rd %12llu wr %12llu | dram rd %12lld (%.4f) wr %12lld (%.4f) | "
	       "L2<-SM rd %12lld wr %12lld\n",
	       v->name, (unsigned long long)srd, (unsigned long long)swr, dr,
	       dr >= 0 && srd ? (double)dr / (double)srd : NAN, dw,
	       dw >= 0 && swr ? (double)dw / (double)swr : NAN, lr, lw);
	fflush(stdout);
}

/* Times the variants of one case interleaved, then counts each. bytes and
 * flops are the case's closed forms (fewest HBM bytes; 0 when not a
 * compute case). */
static void run_case(const char *label, struct variant *v, int nv, double bytes, double flops,
		     int graph)
{
	struct opr_error err = { 0 };
	struct ops_cuda_inst *gis[8];
	double *ns = malloc(sizeof *ns * (size_t)(nv * samples));

	if (!ns)
		exit(1);
	for (int i = 0; i < nv; i++) {
		prepare(&v[i]);
		gis[i] = v[i].gi;
	}
	/* warm-up, then the interleaved samples */
	if (ops_cuda_time(cu, gis, nv, 3, flush, ns, &err) < 0 ||
	    ops_cuda_time(cu, gis, nv, samples, flush, ns, &err) < 0)
		die(&err);
	for (int i = 0; i < nv; i++) {
		struct variant *x = &v[i];
		double gns = NAN;
		x->p95 = quantile(ns + i * samples, samples, 0.95);
		x->p50 = quantile(ns + i * samples, samples, 0.5);
		if (graph && ops_cuda_time_graph(cu, x->gi, 20, &gns, &err) < 0)
			die(&err);
		printf("%-34s %-26s p50 %10.2f us p95 %10.2f us  %7.1f GB/s %8.2f TFLOP/s  launches %d"
		       "  rel_l2 %.2g exact %d  %s\n",
		       label, x->name, x->p50 / 1e3, x->p95 / 1e3, bytes / x->p50,
		       flops / x->p50 / 1e3, ops_cuda_inst_launches(x->gi), x->q.rel_l2, x->q.exact_int,
		       ops_cuda_inst_shape(x->gi));
		fprintf(tsv, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.0f\t%.0f\t%d\t%.3g\t%d\t%s\t%s\n", label, x->name,
			x->p50, x->p95, gns, bytes, flops, ops_cuda_inst_launches(x->gi), x->q.rel_l2,
			x->q.exact_int, x->plan_text, ops_cuda_inst_shape(x->gi));
	}
	fflush(stdout);
	for (int i = 0; i < nv; i++)
		count(label, &v[i]);
	for (int i = 0; i < nv; i++) {
		ops_cuda_inst_free(v[i].gi);
		ops_instance_free(v[i].inst);
	}
	free(ns);
}

static struct ops_plan plan(int fused, enum ops_strategy s, int64_t p0, int64_t p1, int64_t p2,
			    int64_t p3)
{
	struct ops_plan p;
	memset(&p, 0, sizeof p);
	p.fused = fused;
	p.strategy = s;
	p.p[0] = p0;
	p.p[1] = p1;
	p.p[2] = p2;
	p.p[3] = p3;
	p.double_buffer = 1;
	return p;
}

static struct ops_workload act_w(enum ops_act a, enum ops_dtype t, int64_t bytes)
{
	struct ops_workload w;
	memset(&w, 0, sizeof w);
	w.group = OPS_G_ACTIVATION;
	w.act = a;
	w.dtype = t;
	w.tensor.rank = 1;
	w.tensor.dims[0] = bytes / (int64_t)ops_dtype_size(t);
	return w;
}

static struct ops_workload qg_w(enum ops_group g)
{
	struct ops_workload w;
	memset(&w, 0, sizeof w);
	w.group = g;
	w.dtype = OPS_S8;
	w.act = g == OPS_G_QGEMM_DQ_BIAS_ACT ? OPS_ACT_GELU_TANH : OPS_ACT_NONE;
	w.gemm.m = 8;
	w.gemm.n = 64;
	w.gemm.k = 1 << 20;
	w.quant.a = OPS_U8;
	w.quant.a_zero_point = 128;
	w.quant.a_scale = 0.02f;
	w.quant.b_per_channel = 1;
	w.quant.out = OPS_F32;
	return w;
}

static struct ops_workload conv_w(enum ops_group g, enum ops_dtype t, int64_t n)
{
	struct ops_workload w;
	struct ops_conv_shape s = { n, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1 };
	memset(&w, 0, sizeof w);
	w.group = g;
	w.dtype = t;
	w.act = g == OPS_G_CONV_BIAS_ACT ? OPS_ACT_RELU : OPS_ACT_NONE;
	w.conv = s;
	return w;
}

static struct ops_workload perm_w(enum ops_group g)
{
	struct ops_workload w;
	memset(&w, 0, sizeof w);
	w.group = g;
	w.dtype = OPS_F32;
	w.act = g == OPS_G_PERMUTE_ACT ? OPS_ACT_RELU : OPS_ACT_NONE;
	w.tensor.rank = 2;
	w.tensor.dims[0] = 4096;
	w.tensor.dims[1] = 70000;
	w.tensor.perm[0] = 1;
	w.tensor.perm[1] = 0;
	return w;
}

int main(int argc, char **argv)
{
	struct opr_error err = { 0 };
	const char *out = NULL;
	char path[1024];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--warm"))
			flush = 0;
		else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
			samples = (int)strtol(argv[++i], NULL, 10);
		else
			out = argv[i];
	}
	if (!out || samples < 3) {
		fprintf(stderr, "usage: bench_cuda [--warm] [--samples N>=3] OUTDIR\n");
		return 2;
	}
	if (ops_cuda_new(0, &cu, &err) < 0)
		die(&err);
	ops_cuda_envelope(cu, &env);
	const struct ops_cuda_info *in = ops_cuda_info(cu);
	char papi_ver[64] = "unavailable";
	col_papi_version(papi_ver, sizeof papi_ver);
	snprintf(path, sizeof path, "%s/device.json", out);
	FILE *dj = fopen(path, "w");
	if (!dj)
		return 1;
	fprintf(dj,
		"{\"name\": \"%s\", \"cc\": \"%d.%d\", \"sm_count\": %d, \"sm_clock_khz\": %d, "
		"\"mem_clock_khz\": %d, \"mem_bus_bits\": %d, \"l2_bytes\": %zu, "
		"\"shared_per_block_optin\": %zu, \"global_bytes\": %zu, \"driver\": %d, "
		"\"runtime\": %d, \"papi\": \"%s\", \"l2_flush\": %s, \"samples\": %d,\n"
		" \"envelope\": {\"cores\": %d, \"global_bw_gbps\": %.1f, \"shared_capacity_kib\": %.1f, "
		"\"clock_ghz\": %.3f, \"tops_fp32\": %.1f, \"tops_fp16\": %.1f, \"tops_int8\": %.1f}}\n",
		in->name, in->cc_major, in->cc_minor, in->sm_count, in->clock_khz, in->mem_clock_khz,
		in->mem_bus_bits, in->l2_bytes, in->shared_per_block_optin, in->global_bytes,
		in->driver_version, in->runtime_version, papi_ver, flush ? "true" : "false", samples,
		env.cores, env.global_bw_gbps, env.shared_capacity_kib, env.clock_ghz,
		env.tops[OPS_F32], env.tops[OPS_F16], env.tops[OPS_S8]);
	fclose(dj);
	printf("device: %s, %d SMs, cc %d.%d, SM clock %d MHz, driver %d, runtime %d, PAPI %s, L2 %s\n",
	       in->name, in->sm_count, in->cc_major, in->cc_minor, in->clock_khz / 1000,
	       in->driver_version, in->runtime_version, papi_ver, flush ? "flushed" : "warm");
	snprintf(path, sizeof path, "%s/bench.tsv", out);
	tsv = fopen(path, "w");
	snprintf(path, sizeof path, "%s/counters.tsv", out);
	ctsv = fopen(path, "w");
	if (!tsv || !ctsv)
		return 1;
	fprintf(tsv, "case\tvariant\tp50_ns\tp95_ns\tgraph_ns\tbytes\tflops\tlaunches\trel_l2\texact\tplan\tshape\n");
	fprintf(ctsv, "case\tvariant\tevent\tprovenance\tvalue\treason\n");

	double copy_ns = 0;
	const size_t gib = (size_t)1 << 30;
	if (ops_cuda_copy_bench(cu, gib, 20, &copy_ns, &err) < 0)
		die(&err);
	printf("copy 1 GiB: %.1f us, %.1f GB/s counting read + write\n", copy_ns / 1e3,
	       2.0 * gib / copy_ns);
	fprintf(tsv, "copy 1GiB\tours\t%.1f\t\t\t%.0f\t0\t1\t0\t1\tfloat4 grid-stride\tk_copy\n", copy_ns,
		2.0 * gib);
	fflush(tsv);

	/* qgemm u8 x s8 M=8 N=64 K=2^20 (A + B bytes) */
	{
		struct variant v[3] = {
			{ .name = "pinned", .w = qg_w(OPS_G_QGEMM), .plan = plan(1, OPS_STRAT_DIRECT, 64, 4096, 132, 0) },
			{ .name = "kk2048-single", .w = qg_w(OPS_G_QGEMM), .plan = plan(1, OPS_STRAT_DIRECT, 64, 2048, 132, 0) },
			{ .name = "planner", .w = qg_w(OPS_G_QGEMM), .use_planner = 1, .plan = plan(1, OPS_STRAT_DIRECT, 0, 0, 0, 0) },
		};
		v[1].plan.double_buffer = 0;
		double b = 8.0 * (1 << 20) + 64.0 * (1 << 20);
		run_case("qgemm u8s8 m8 n64 k2^20", v, 3, b, 2.0 * 8 * 64 * (1 << 20), 0);
	}
	/* permute [4096,70000] fp32 (1,0) */
	{
		struct variant v[2] = {
			{ .name = "tile64", .w = perm_w(OPS_G_PERMUTE), .plan = plan(1, OPS_STRAT_DIRECT, 64, 64, 0, 0) },
			{ .name = "tile32", .w = perm_w(OPS_G_PERMUTE), .plan = plan(1, OPS_STRAT_DIRECT, 32, 32, 0, 0) },
		};
		run_case("permute [4096,70000] fp32 (1,0)", v, 2, 2.0 * 4096 * 70000 * 4, 0, 0);
	}
	/* activations 64 MiB */
	static const enum ops_act acts[] = { OPS_ACT_RELU, OPS_ACT_GELU_TANH, OPS_ACT_SILU };
	static const enum ops_dtype adt[] = { OPS_F32, OPS_BF16 };
	for (int d = 0; d < 2; d++)
		for (int a = 0; a < 3; a++) {
			char label[96];
			struct variant v[2] = {
				{ .name = "default", .w = act_w(acts[a], adt[d], 64 << 20), .plan = plan(0, OPS_STRAT_DIRECT, 0, 0, 0, 0) },
				{ .name = "tile4096", .w = act_w(acts[a], adt[d], 64 << 20), .plan = plan(0, OPS_STRAT_DIRECT, 4096, 0, 0, 0) },
			};
			snprintf(label, sizeof label, "%s 64MiB %s", ops_act_name(acts[a]),
				 ops_dtype_name(adt[d]));
			run_case(label, v, 2, 2.0 * (64 << 20), 0, 0);
		}
	/* conv2d [n,64,56,56] -> 64 3x3 */
	static const enum ops_dtype cdt[] = { OPS_F32, OPS_F16, OPS_BF16 };
	for (int d = 0; d < 3; d++) {
		char label[96];
		struct variant v[2] = {
			{ .name = "im2col", .w = conv_w(OPS_G_CONV, cdt[d], 1), .plan = plan(1, OPS_STRAT_IM2COL, 0, 0, 0, 0) },
			{ .name = "direct", .w = conv_w(OPS_G_CONV, cdt[d], 1), .plan = plan(1, OPS_STRAT_DIRECT, 16, 4, 64, 16) },
		};
		snprintf(label, sizeof label, "conv2d n1 64x56x56 k64 3x3 %s", ops_dtype_name(cdt[d]));
		run_case(label, v, 2, 0, 2.0 * 56 * 56 * 64 * 64 * 9, 1);
	}
	{
		struct variant v[1] = {
			{ .name = "im2col", .w = conv_w(OPS_G_CONV, OPS_F16, 32), .plan = plan(1, OPS_STRAT_IM2COL, 0, 0, 0, 0) },
		};
		run_case("conv2d n32 64x56x56 k64 3x3 fp16", v, 1, 0, 32 * 2.0 * 56 * 56 * 64 * 64 * 9, 0);
	}
	/* the fused groups: unfused (baseline) against fused (candidate) */
	{
		struct variant v[2] = {
			{ .name = "unfused", .w = conv_w(OPS_G_CONV_BIAS_ACT, OPS_F16, 1), .plan = plan(0, OPS_STRAT_IM2COL, 0, 0, 0, 0) },
			{ .name = "fused", .w = conv_w(OPS_G_CONV_BIAS_ACT, OPS_F16, 1), .plan = plan(1, OPS_STRAT_IM2COL, 0, 0, 0, 0) },
		};
		run_case("conv2d+bias+relu n1 fp16", v, 2, 0, 2.0 * 56 * 56 * 64 * 64 * 9, 1);
	}
	{
		struct variant v[2] = {
			{ .name = "unfused", .w = qg_w(OPS_G_QGEMM_DQ_BIAS_ACT), .plan = plan(0, OPS_STRAT_DIRECT, 64, 4096, 132, 0) },
			{ .name = "fused", .w = qg_w(OPS_G_QGEMM_DQ_BIAS_ACT), .plan = plan(1, OPS_STRAT_DIRECT, 64, 4096, 132, 0) },
		};
		run_case("qgemm+dq+bias+gelu-tanh", v, 2, 8.0 * (1 << 20) + 64.0 * (1 << 20), 0, 1);
	}
	{
		struct variant v[2] = {
			{ .name = "unfused", .w = perm_w(OPS_G_PERMUTE_ACT), .plan = plan(0, OPS_STRAT_DIRECT, 64, 64, 0, 0) },
			{ .name = "fused", .w = perm_w(OPS_G_PERMUTE_ACT), .plan = plan(1, OPS_STRAT_DIRECT, 64, 64, 0, 0) },
		};
		run_case("permute+relu [4096,70000] fp32", v, 2, 2.0 * 4096 * 70000 * 4, 0, 0);
	}
	fclose(tsv);
	fclose(ctsv);
	ops_cuda_free(cu);
	return 0;
}
