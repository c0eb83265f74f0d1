/* tests/cuda/bench_cuda.c: the CUDA backend's benchmark on the GPU host:
 * the copy reference, the target shapes and the fused groups
 * (unfused and fused), each checked against the reference, then timed with
 * CUDA events (L2 flushed before each sample unless --warm) in seeded
 * randomised rounds: each round samples every variant of the case and its
 * peer (torch, through tests/cuda/bench_torch.py --serve on a pipe: the
 * same GPU, the same flush-then-events sample) once, in an order shuffled
 * from the seed, as the GPU review path samples baseline and candidate; a
 * case stops on the host's rule (p95's 95% CI within +-2% with at least the
 * 368 samples a p99 claim takes, col_p95_ci_enough) or at --max-rounds or
 * its --budget. Then each variant is counted in a pass of its own through
 * PAPI's cuda component beside the simulated GLOBAL bytes of the same plan
 * on the device's envelope.
 *
 * usage: bench_cuda [--warm] [--seed S] [--max-rounds N] [--budget SECONDS]
 *                   [--only TEXT] [--no-peers] OUTDIR
 * (--only: just the cases whose label contains TEXT, or one of TEXT's
 * comma-separated parts: --only copy,qgemm)
 * writes OUTDIR/bench.tsv (one row per variant and peer: p50, p95 and its
 * CI, samples, stop reason), OUTDIR/counters.tsv and OUTDIR/device.json, and
 * prints the tables. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../analyze/stats.h"
#include "../../collect/collect.h"
#include "../../ops/cuda/cuda.h"

static struct ops_cuda *cu;
static struct ops_envelope env;
static int flush = 1, max_rounds = 4000, use_peers = 1;
static double budget_s = 20.0;
static const char *only; /* --only: the cases whose label holds it */
static uint64_t seed = 2026;
static FILE *tsv, *ctsv;

/* ---- the peer server (torch in the image's python3) --------------------------- */

static FILE *peer_in, *peer_out; /* our writes, its replies */
static pid_t peer_pid = -1;
static char peer_version[128] = "";

static void peer_close(void)
{
	if (peer_in)
		fclose(peer_in);
	if (peer_out)
		fclose(peer_out);
	peer_in = peer_out = NULL;
	if (peer_pid > 0)
		waitpid(peer_pid, NULL, 0);
	peer_pid = -1;
}

/* Starts `python3 tests/cuda/bench_torch.py --serve OUTDIR`; 0 with the
 * server ready, -1 (peers unavailable, why printed) otherwise. */
static int peer_open(const char *out)
{
	int to[2], from[2];
	char line[256];

	if (pipe(to) || pipe(from))
		return -1;
	peer_pid = fork();
	if (peer_pid < 0)
		return -1;
	if (peer_pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		execlp("python3", "python3", "tests/cuda/bench_torch.py", "--serve", out, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	peer_in = fdopen(to[1], "w");
	peer_out = fdopen(from[0], "r");
	if (!peer_in || !peer_out || !fgets(line, sizeof line, peer_out) ||
	    strncmp(line, "ready ", 6)) {
		printf("peers: unavailable (%s)\n", peer_out && line[0] ? "the server did not start"
								: "no python3 server");
		peer_close();
		return -1;
	}
	line[strcspn(line, "\n")] = 0;
	snprintf(peer_version, sizeof peer_version, "%s", line + 6);
	return 0;
}

/* One request, one line back. -1 when the server is gone. */
static int peer_ask(const char *req, char *reply, size_t len)
{
	if (!peer_in)
		return -1;
	if (fprintf(peer_in, "%s\n", req) < 0 || fflush(peer_in) || !fgets(reply, (int)len, peer_out))
		return -1;
	reply[strcspn(reply, "\n")] = 0;
	return 0;
}

struct variant {
	const char *name;
	struct ops_workload w;
	struct ops_plan plan;
	int use_planner;          /* plan from ops_plan_resolve on the device envelope */
	struct ops_instance *inst;
	struct ops_cuda_inst *gi;
	struct ops_quality q;
	char plan_text[192];
};

/* One timed thing of a case: a variant of ours or the case's peer. */
struct item {
	struct variant *v;        /* NULL: the peer */
	const char *peer_key;
	struct col_variant_run vr; /* its samples, for the host's stopping rule */
	size_t cap;
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

static int sample_item(struct item *it, int64_t *ns)
{
	struct opr_error err = { 0 };
	char req[160], rep[160];
	double d = 0;

	if (it->v) {
		if (ops_cuda_time(cu, &it->v->gi, 1, 1, flush, &d, &err) < 0)
			die(&err);
		*ns = llround(d);
		return 0;
	}
	snprintf(req, sizeof req, "s %s", it->peer_key);
	if (peer_ask(req, rep, sizeof rep) < 0 || sscanf(rep, "%lf", &d) != 1 || !(d > 0)) {
		printf("peers: the server failed on '%s' (%s): peers unavailable from here on\n",
		       it->peer_key, rep);
		peer_close();
		return -1;
	}
	*ns = llround(d);
	return 0;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* p50, p95 and p95's 95% CI of an item's samples. */
static void item_stats(const struct item *it, double *p50, struct ana_qci *ci)
{
	struct opr_error err = { 0 };
	size_t n = it->vr.nsamples;
	int64_t *s = malloc(sizeof *s * (n ? n : 1));

	if (!s)
		exit(1);
	memcpy(s, it->vr.samples_ns, sizeof *s * n);
	qsort(s, n, sizeof *s, cmp_i64);
	*p50 = ana_quantile(s, n, 0.5);
	if (ana_quantile_ci(s, n, 0.95, 0.95, ci, &err) < 0)
		die(&err);
	free(s);
}

/* Whether --only selects the case: its label holds one of the option's
 * comma-separated parts (no option: every case). */
static int case_selected(const char *label)
{
	if (!only)
		return 1;
	for (const char *p = only; *p;) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char part[128];
		if (n > 0 && n < sizeof part) {
			memcpy(part, p, n);
			part[n] = 0;
			if (strstr(label, part))
				return 1;
		}
		p += n + (e != NULL);
	}
	return 0;
}

/* Times the variants of one case and its peer (peer_key, NULL: none) in
 * seeded randomised rounds until the stopping rule holds, then counts each
 * variant. bytes and flops are the case's closed forms (fewest HBM bytes;
 * 0 when not a compute case). */
static void run_case(const char *label, struct variant *v, int nv, double bytes, double flops,
		     int graph, const char *peer_key)
{
	struct opr_error err = { 0 };
	struct item it[9];
	int ni = 0, order[9], rounds = 0;
	int64_t *scratch = NULL;
	size_t scratch_cap = 0;
	char stop[128] = "";
	const int64_t need = (int64_t)opr_min_samples(0.99, 0.95);

	if (!case_selected(label))
		return;
	memset(it, 0, sizeof it);
	for (int i = 0; i < nv; i++) {
		prepare(&v[i]);
		it[ni++].v = &v[i];
	}
	if (peer_key && peer_in) {
		char req[160], rep[160];
		snprintf(req, sizeof req, "p %s", peer_key);
		if (peer_ask(req, rep, sizeof rep) == 0 && !strcmp(rep, "ok")) {
			it[ni].peer_key = peer_key;
			ni++;
		} else {
			printf("peers: '%s' not prepared (%s)\n", peer_key, rep);
		}
	}
	if (ni == 0) {
		printf("%-34s not timed: no variant and no peer\n", label);
		return;
	}
	/* warm-up: three samples of each, not kept */
	for (int w = 0; w < 3; w++)
		for (int i = 0; i < ni; i++) {
			int64_t ns;
			if (sample_item(&it[i], &ns) < 0)
				it[i--] = it[--ni];
		}
	const double t_end = now_s() + budget_s;
	for (;;) {
		ops_shuffle_order(order, ni, &seed);
		for (int k = 0; k < ni; k++) {
			struct item *x = &it[order[k]];
			int64_t ns;
			if (sample_item(x, &ns) < 0) {
				/* the peer is gone: the case goes on without it */
				free(x->vr.samples_ns);
				free(x->vr.round);
				memset(&x->vr, 0, sizeof x->vr);
				x->peer_key = NULL;
				continue;
			}
			if (col_sample_push(&x->vr, &x->cap, ns, rounds, &err) < 0)
				die(&err);
		}
		rounds++;
		if (rounds % 4 == 0) {
			int all = 1;
			for (int i = 0; i < ni && all; i++) {
				if (!it[i].v && !it[i].peer_key)
					continue;
				int e = col_p95_ci_enough(&it[i].vr, need, &scratch, &scratch_cap, &err);
				if (e < 0)
					die(&err);
				all = e;
			}
			if (all) {
				snprintf(stop, sizeof stop, "p95 CI within +-2%% (>= %lld samples)",
					 (long long)need);
				break;
			}
		}
		if (rounds >= max_rounds) {
			snprintf(stop, sizeof stop, "max rounds %d reached", max_rounds);
			break;
		}
		if (now_s() >= t_end) {
			snprintf(stop, sizeof stop, "budget %.0f s spent before p95's CI reached +-2%%",
				 budget_s);
			break;
		}
	}
	free(scratch);
	for (int i = 0; i < ni; i++) {
		struct item *x = &it[i];
		double p50, gns = NAN;
		struct ana_qci ci;
		if (!x->v && !x->peer_key)
			continue;
		item_stats(x, &p50, &ci);
		if (x->v && graph && ops_cuda_time_graph(cu, x->v->gi, 20, &gns, &err) < 0)
			die(&err);
		const char *name = x->v ? x->v->name : "peer";
		printf("%-34s %-14s p50 %10.2f us p95 %10.2f us [%9.2f, %9.2f] n %4zu  %7.1f GB/s "
		       "%7.2f TFLOP/s",
		       label, name, p50 / 1e3, ci.estimate / 1e3, ci.lo / 1e3, ci.hi / 1e3,
		       x->vr.nsamples, bytes / p50, flops / p50 / 1e3);
		if (x->v)
			printf("  launches %d rel_l2 %.2g exact %d  %s\n", ops_cuda_inst_launches(x->v->gi),
			       x->v->q.rel_l2, x->v->q.exact_int, ops_cuda_inst_shape(x->v->gi));
		else
			printf("  torch %s\n", x->peer_key);
		fprintf(tsv, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%zu\t%d\t%s\t%.1f\t%.0f\t%.0f\t%d\t%.3g\t%d\t%s\t%s\n",
			label, name, p50, ci.estimate, ci.lo, ci.hi, x->vr.nsamples, rounds, stop, gns,
			bytes, flops, x->v ? ops_cuda_inst_launches(x->v->gi) : 0,
			x->v ? x->v->q.rel_l2 : 0.0, x->v ? x->v->q.exact_int : 0,
			x->v ? x->v->plan_text : "torch", x->v ? ops_cuda_inst_shape(x->v->gi) : x->peer_key);
		free(x->vr.samples_ns);
		free(x->vr.round);
	}
	printf("  stop: %s after %d rounds\n", stop, rounds);
	fflush(stdout);
	fflush(tsv);
	if (peer_in) {
		char rep[64];
		peer_ask("d", rep, sizeof rep); /* the peer frees the case's tensors */
	}
	for (int i = 0; i < nv; i++)
		count(label, &v[i]);
	for (int i = 0; i < nv; i++) {
		ops_cuda_inst_free(v[i].gi);
		ops_instance_free(v[i].inst);
	}
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
		else if (!strcmp(argv[i], "--no-peers"))
			use_peers = 0;
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--max-rounds") && i + 1 < argc)
			max_rounds = (int)strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--budget") && i + 1 < argc)
			budget_s = strtod(argv[++i], NULL);
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else
			out = argv[i];
	}
	if (!out || max_rounds < 4 || !(budget_s > 0)) {
		fprintf(stderr, "usage: bench_cuda [--warm] [--seed S] [--max-rounds N>=4] "
				"[--budget SECONDS] [--only TEXT] [--no-peers] OUTDIR\n");
		return 2;
	}
	const uint64_t seed0 = seed;
	if (mkdir(out, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "bench_cuda: %s: %s\n", out, strerror(errno));
		return 1;
	}
	signal(SIGPIPE, SIG_IGN); /* a peer server that dies is a failed ask, not our death */
	if (ops_cuda_new(0, &cu, &err) < 0)
		die(&err);
	ops_cuda_envelope(cu, &env);
	const struct ops_cuda_info *in = ops_cuda_info(cu);
	char papi_ver[64] = "unavailable";
	col_papi_version(papi_ver, sizeof papi_ver);
	/* the cost of one launch a fused group saves: the table's bar for
	 * "faster by the launches saved" (the envelope's launch_next probe) */
	double launch_us[31];
	if (ops_cuda_probe(cu, OPS_CUDA_P_LAUNCH_NEXT, 0, 31, launch_us, &err) < 0)
		die(&err);
	qsort(launch_us, 31, sizeof *launch_us, cmp_double);
	snprintf(path, sizeof path, "%s/device.json", out);
	FILE *dj = fopen(path, "w");
	if (!dj)
		return 1;
	fprintf(dj,
		"{\"name\": \"%s\", \"cc\": \"%d.%d\", \"sm_count\": %d, \"sm_clock_khz\": %d, "
		"\"mem_clock_khz\": %d, \"mem_bus_bits\": %d, \"l2_bytes\": %zu, "
		"\"shared_per_block_optin\": %zu, \"global_bytes\": %zu, \"driver\": %d, "
		"\"runtime\": %d, \"papi\": \"%s\", \"l2_flush\": %s, \"seed\": %llu, "
		"\"max_rounds\": %d, \"budget_s\": %.1f, \"launch_next_us\": %.3f,\n"
		" \"envelope\": {\"cores\": %d, \"global_bw_gbps\": %.1f, \"shared_capacity_kib\": %.1f, "
		"\"clock_ghz\": %.3f, \"tops_fp32\": %.1f, \"tops_fp16\": %.1f, \"tops_int8\": %.1f}}\n",
		in->name, in->cc_major, in->cc_minor, in->sm_count, in->clock_khz, in->mem_clock_khz,
		in->mem_bus_bits, in->l2_bytes, in->shared_per_block_optin, in->global_bytes,
		in->driver_version, in->runtime_version, papi_ver, flush ? "true" : "false",
		(unsigned long long)seed0, max_rounds, budget_s, launch_us[15],
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
	fprintf(tsv, "case\tvariant\tp50_ns\tp95_ns\tp95_lo_ns\tp95_hi_ns\tsamples\trounds\tstop\t"
		     "graph_ns\tbytes\tflops\tlaunches\trel_l2\texact\tplan\tshape\n");
	fprintf(ctsv, "case\tvariant\tevent\tprovenance\tvalue\treason\n");

	if (use_peers && peer_open(out) == 0)
		printf("peers: torch %s, in the same rounds as ours\n", peer_version);
	printf("timing: seed %llu, rounds shuffled, stop when p95's 95%% CI is within +-2%% with >= %zu "
	       "samples each, at most %d rounds or %.0f s a case\n",
	       (unsigned long long)seed0, opr_min_samples(0.99, 0.95), max_rounds, budget_s);

	/* the bandwidth reference: our float4 copy (a median of 20, its own
	 * loop) and torch's copy_ (the peer, by the stopping rule) */
	double copy_ns = 0;
	const size_t gib = (size_t)1 << 30;
	if (ops_cuda_copy_bench(cu, gib, 20, &copy_ns, &err) < 0)
		die(&err);
	printf("copy 1 GiB: %.1f us, %.1f GB/s counting read + write\n", copy_ns / 1e3,
	       2.0 * gib / copy_ns);
	fprintf(tsv, "copy 1GiB\tours\t%.1f\t\t\t\t20\t20\tmedian of 20\t\t%.0f\t0\t1\t0\t1\tfloat4 grid-stride\tk_copy\n",
		copy_ns, 2.0 * gib);
	fflush(tsv);
	run_case("copy 1GiB", NULL, 0, 2.0 * gib, 0, 0, "copy");

	/* qgemm u8 x s8 M=8 N=64 K=2^20 (A + B bytes) */
	{
		struct variant v[3] = {
			{ .name = "pinned", .w = qg_w(OPS_G_QGEMM), .plan = plan(1, OPS_STRAT_DIRECT, 64, 4096, 132, 0) },
			{ .name = "kk2048-single", .w = qg_w(OPS_G_QGEMM), .plan = plan(1, OPS_STRAT_DIRECT, 64, 2048, 132, 0) },
			{ .name = "planner", .w = qg_w(OPS_G_QGEMM), .use_planner = 1, .plan = plan(1, OPS_STRAT_DIRECT, 0, 0, 0, 0) },
		};
		v[1].plan.double_buffer = 0;
		double b = 8.0 * (1 << 20) + 64.0 * (1 << 20);
		run_case("qgemm u8s8 m8 n64 k2^20", v, 3, b, 2.0 * 8 * 64 * (1 << 20), 0, "int_mm m32");
	}
	/* permute [4096,70000] fp32 (1,0) */
	{
		struct variant v[2] = {
			{ .name = "tile64", .w = perm_w(OPS_G_PERMUTE), .plan = plan(1, OPS_STRAT_DIRECT, 64, 64, 0, 0) },
			{ .name = "tile32", .w = perm_w(OPS_G_PERMUTE), .plan = plan(1, OPS_STRAT_DIRECT, 32, 32, 0, 0) },
		};
		run_case("permute [4096,70000] fp32 (1,0)", v, 2, 2.0 * 4096 * 70000 * 4, 0, 0, "transpose");
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
			char key[64];
			snprintf(label, sizeof label, "%s 64MiB %s", ops_act_name(acts[a]),
				 ops_dtype_name(adt[d]));
			snprintf(key, sizeof key, "%s %s", ops_act_name(acts[a]), ops_dtype_name(adt[d]));
			run_case(label, v, 2, 2.0 * (64 << 20), 0, 0, key);
		}
	/* conv2d [n,64,56,56] -> 64 3x3 */
	static const enum ops_dtype cdt[] = { OPS_F32, OPS_F16, OPS_BF16 };
	for (int d = 0; d < 3; d++) {
		char label[96];
		struct variant v[2] = {
			{ .name = "im2col", .w = conv_w(OPS_G_CONV, cdt[d], 1), .plan = plan(1, OPS_STRAT_IM2COL, 0, 0, 0, 0) },
			{ .name = "direct", .w = conv_w(OPS_G_CONV, cdt[d], 1), .plan = plan(1, OPS_STRAT_DIRECT, 16, 4, 64, 16) },
		};
		char key[64];
		snprintf(label, sizeof label, "conv2d n1 64x56x56 k64 3x3 %s", ops_dtype_name(cdt[d]));
		snprintf(key, sizeof key, "conv n1 %s", ops_dtype_name(cdt[d]));
		run_case(label, v, 2, 0, 2.0 * 56 * 56 * 64 * 64 * 9, 1, key);
	}
	for (int d = 0; d < 3; d++) {
		char label[96], key[64];
		struct variant v[1] = {
			{ .name = "im2col", .w = conv_w(OPS_G_CONV, cdt[(d + 1) % 3], 32), .plan = plan(1, OPS_STRAT_IM2COL, 0, 0, 0, 0) },
		};
		/* fp16 first: the target row of the table; then bf16 and fp32 */
		snprintf(label, sizeof label, "conv2d n32 64x56x56 k64 3x3 %s", ops_dtype_name(cdt[(d + 1) % 3]));
		snprintf(key, sizeof key, "conv n32 %s", ops_dtype_name(cdt[(d + 1) % 3]));
		run_case(label, v, 1, 0, 32 * 2.0 * 56 * 56 * 64 * 64 * 9, 0, key);
	}
	/* the fused groups: unfused (baseline) against fused (candidate) */
	{
		struct variant v[2] = {
			{ .name = "unfused", .w = conv_w(OPS_G_CONV_BIAS_ACT, OPS_F16, 1), .plan = plan(0, OPS_STRAT_IM2COL, 0, 0, 0, 0) },
			{ .name = "fused", .w = conv_w(OPS_G_CONV_BIAS_ACT, OPS_F16, 1), .plan = plan(1, OPS_STRAT_IM2COL, 0, 0, 0, 0) },
		};
		run_case("conv2d+bias+relu n1 fp16", v, 2, 0, 2.0 * 56 * 56 * 64 * 64 * 9, 1, NULL);
	}
	{
		struct variant v[2] = {
			{ .name = "unfused", .w = qg_w(OPS_G_QGEMM_DQ_BIAS_ACT), .plan = plan(0, OPS_STRAT_DIRECT, 64, 4096, 132, 0) },
			{ .name = "fused", .w = qg_w(OPS_G_QGEMM_DQ_BIAS_ACT), .plan = plan(1, OPS_STRAT_DIRECT, 64, 4096, 132, 0) },
		};
		run_case("qgemm+dq+bias+gelu-tanh", v, 2, 8.0 * (1 << 20) + 64.0 * (1 << 20), 0, 1, NULL);
	}
	{
		struct variant v[2] = {
			{ .name = "unfused", .w = perm_w(OPS_G_PERMUTE_ACT), .plan = plan(0, OPS_STRAT_DIRECT, 64, 64, 0, 0) },
			{ .name = "fused", .w = perm_w(OPS_G_PERMUTE_ACT), .plan = plan(1, OPS_STRAT_DIRECT, 64, 64, 0, 0) },
		};
		run_case("permute+relu [4096,70000] fp32", v, 2, 2.0 * 4096 * 70000 * 4, 0, 0, NULL);
	}
	if (peer_in) {
		char rep[64];
		peer_ask("q", rep, sizeof rep);
	}
	peer_close();
	fclose(tsv);
	fclose(ctsv);
	ops_cuda_free(cu);
	return 0;
}
