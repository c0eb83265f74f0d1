/* analyze/validate.c: model validation. On an envelope calibrated on this host
 * (`opreview calibrate`), the device model's time of every plan that has a
 * host measurement is held against it: ratio = modelled / measured, the term
 * that dominated the model, the median and worst |ratio - 1| over the run, and
 * per variant the planner's ranking against the measured one (Kendall's tau)
 * and the measured slowdown of its choice against the best measured plan —
 * the check kerncraft makes of its roofline/ECM predictions. Times in ns. */
#include "analyze_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *ana_term_name(enum ana_term t)
{
	static const char *const n[] = {"launch overhead", "compute", "SHARED", "GLOBAL", "DMA setup"};
	return (unsigned)t < ANA_NTERMS ? n[t] : "unknown";
}

double ana_kendall_tau(const double *x, const double *y, size_t n)
{
	if (n < 2)
		return NAN;
	double s = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			double a = x[i] - x[j], b = y[i] - y[j];
			/* +1 concordant, -1 discordant, 0 a tie in either list */
			s += (double)(((a > 0) - (a < 0)) * ((b > 0) - (b < 0)));
		}
	return s / ((double)n * (double)(n - 1) / 2.0);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of the host samples; NAN without samples. */
static int median_ns(const struct col_variant_run *vr, double *out, struct opr_error *err)
{
	*out = NAN;
	if (!vr->nsamples || !vr->samples_ns)
		return 0;
	int64_t *s = malloc(vr->nsamples * sizeof *s);
	if (!s)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	memcpy(s, vr->samples_ns, vr->nsamples * sizeof *s);
	qsort(s, vr->nsamples, sizeof *s, cmp_i64);
	size_t n = vr->nsamples;
	*out = n % 2 ? (double)s[n / 2] : 0.5 * ((double)s[n / 2 - 1] + (double)s[n / 2]);
	free(s);
	return 0;
}

static enum ana_term largest(const double *t)
{
	enum ana_term m = ANA_T_OVERHEAD;
	for (int i = 1; i < ANA_NTERMS; i++)
		if (t[i] > t[m])
			m = (enum ana_term)i;
	return m;
}

/* The model's terms of a plan known only by its dry-run counters (a planner
 * alternative), with the envelope's aggregate rates (ops/model.c per core,
 * summed over the cores; exact when cores is 1, as on a host envelope):
 *   overhead = launches x launch_overhead;  compute = ops / rate
 *   SHARED = on-chip bytes / (shared_bw x cores);  GLOBAL = bytes / global_bw
 *   (read bytes / read_bw + written bytes / write_bw where the envelope has them)
 *   DMA = transfers x setup / (engines x cores) */
static void alt_terms(const struct ops_envelope *e, enum ops_dtype dt, const struct ops_counters *c,
		      double *t)
{
	double cores = e->cores > 0 ? e->cores : 1, comp = 0;
	for (int k = 0; k < OPS_NDTYPES; k++) {
		double tops = (k == OPS_S8 || k == OPS_U8 || k == OPS_S32) ? e->tops[OPS_S8] : e->tops[k];
		if (c->macs[k] && tops > 0)
			comp += 2.0 * (double)c->macs[k] / (tops * 1e3 * e->clock_scale);
	}
	double et = (dt == OPS_S8 || dt == OPS_U8) ? e->tops[OPS_S8] : e->tops[dt];
	if (et > 0)
		comp += (double)c->elem_ops / (et * 1e3 * e->clock_scale);
	uint64_t sh = c->compute_read_bytes + c->compute_write_bytes;
	for (int s = 0; s < OPS_NSPACES; s++)
		sh += c->bytes[s][OPS_SHARED] + c->bytes[OPS_SHARED][s];
	t[ANA_T_OVERHEAD] = (double)c->launches * e->launch_overhead_us * 1e3;
	t[ANA_T_COMPUTE] = comp;
	t[ANA_T_SHARED] = e->shared_bw_gbps > 0 ? (double)sh / (e->shared_bw_gbps * cores) : 0;
	if (e->global_read_bw_gbps > 0 || e->global_write_bw_gbps > 0) {
		/* priced per direction, as ops/model.c does on such an envelope */
		uint64_t rd = 0;
		for (int s = 0; s < OPS_NSPACES; s++)
			rd += c->bytes[OPS_GLOBAL][s];
		double rbw = e->global_read_bw_gbps > 0 ? e->global_read_bw_gbps : e->global_bw_gbps;
		double wbw = e->global_write_bw_gbps > 0 ? e->global_write_bw_gbps : e->global_bw_gbps;
		t[ANA_T_GLOBAL] = (double)rd / rbw + (double)(ops_global_bytes(c) - rd) / wbw;
	} else {
		t[ANA_T_GLOBAL] = e->global_bw_gbps > 0 ? (double)ops_global_bytes(c) / e->global_bw_gbps : 0;
	}
	t[ANA_T_DMA] = e->dma_engines > 0 ? (double)c->transfers * e->dma_setup_ns / (e->dma_engines * cores) : 0;
}


static struct ana_model_row *add_row(struct ana_list *l, int b, int v, int alt)
{
	struct ana_model_row *r = ana_list_push(l);
	if (r) {
		r->block = b;
		r->variant = v;
		r->alt = alt;
	}
	return r;
}

static void finish_row(struct ana_model_row *r)
{
	r->ratio = r->measured_ns > 0 ? r->model_ns / r->measured_ns : NAN;
	r->dominant = largest(r->terms);
}

/* The planner's check on one variant: its choice is the first fitting
 * alternative (the planner ranks by modelled time, best first). */
static void planner_row(const struct col_block_run *br, int b, int v, struct ana_list *pl,
			int *oom)
{
	const struct col_variant_run *vr = &br->v[v];
	enum ops_group g = br->block->work.group;
	double mx[64], my[64];
	size_t n = 0;
	int choice = -1, best = -1;
	if (!vr->alt_measured_ns)
		return;
	for (size_t i = 0; i < vr->nalts && n < 64; i++) {
		if (!vr->alts[i].fits)
			continue;
		if (choice < 0)
			choice = (int)i;
		double m = vr->alt_measured_ns[i];
		if (!isfinite(m) || !(m > 0))
			continue;
		mx[n] = vr->alts[i].model_ns;
		my[n] = m;
		n++;
		if (best < 0 || m < vr->alt_measured_ns[best])
			best = (int)i;
	}
	if (!n)
		return;
	struct ana_planner_row *p = ana_list_push(pl);
	if (!p) {
		*oom = 1;
		return;
	}
	p->block = b;
	p->variant = v;
	p->candidates = (int)n;
	p->tau = ana_kendall_tau(mx, my, n);
	p->choice_ns = choice >= 0 ? vr->alt_measured_ns[choice] : NAN;
	p->best_ns = vr->alt_measured_ns[best];
	if (choice >= 0)
		ops_plan_describe(g, &vr->alts[choice].plan, p->choice_plan, sizeof p->choice_plan);
	ops_plan_describe(g, &vr->alts[best].plan, p->best_plan, sizeof p->best_plan);
	p->slowdown = p->best_ns > 0 ? p->choice_ns / p->best_ns - 1.0 : NAN;
	p->slowdown_lo = p->slowdown_hi = NAN;
	/* Paired, where the run kept the rounds (collect.h, alt_vs_choice): each
	 * round timed every plan once, so the choice's time over another plan's
	 * in the same round cancels what drifted between rounds; the best plan is
	 * the one the choice was slowest against (the choice itself, ratio 1,
	 * when none was faster), and the slowdown that median ratio - 1, with
	 * its CI. The unpaired medians above took the least of four noisy
	 * medians for the best, so tied plans showed a slowdown by chance (the
	 * same plans, 0-37% apart run to run). */
	const double *vc = vr->alt_vs_choice;
	if (vc && choice >= 0 && isfinite(vc[3 * choice])) {
		int pb = choice;
		for (size_t i = 0; i < vr->nalts; i++)
			if (vr->alts[i].fits && isfinite(vc[3 * i]) && vc[3 * i] > vc[3 * pb])
				pb = (int)i;
		p->paired = 1;
		p->slowdown = vc[3 * pb] - 1.0;
		p->slowdown_lo = vc[3 * pb + 1] - 1.0;
		p->slowdown_hi = vc[3 * pb + 2] - 1.0;
		p->best_ns = vr->alt_measured_ns[pb];
		ops_plan_describe(g, &vr->alts[pb].plan, p->best_plan, sizeof p->best_plan);
	}
	p->within = isfinite(p->slowdown) && p->slowdown <= ana_check_rule(ANA_CHK_PLANNER)->limit;
}

int ana_model_validate(const struct col_run *run, struct ana_model_validation *mv,
		       struct opr_error *err)
{
	const struct col_profile *p = run->profile;
	memset(mv, 0, sizeof *mv);
	mv->median_abs_error = mv->worst_abs_error = NAN;
	mv->worst = -1;
	if (p->imported[0]) {
		snprintf(mv->reason, sizeof mv->reason,
			 "imported run: no plan and no device model to validate");
		return 0;
	}
	if (!p->calibration.present) {
		snprintf(mv->reason, sizeof mv->reason,
			 "the envelope '%s' is a target description, not measured on this host: "
			 "modelled times are unvalidated", p->envelope.name);
		return 0;
	}
	if (p->calibration.device != p->device.kind) {
		snprintf(mv->reason, sizeof mv->reason,
			 "the envelope '%s' was calibrated on the %s, but the blocks ran on the %s: "
			 "modelled times are unvalidated", p->envelope.name,
			 p->calibration.device == COL_DEV_CUDA ? "GPU (device cuda)" : "host",
			 p->device.kind == COL_DEV_CUDA ? "GPU (device cuda)" : "host");
		return 0;
	}
	if (run->host.hostname[0] && strcmp(p->calibration.host, run->host.hostname)) {
		snprintf(mv->reason, sizeof mv->reason,
			 "the envelope '%s' was calibrated on '%.60s', not on this run's host '%.60s': "
			 "modelled times are unvalidated", p->envelope.name, p->calibration.host,
			 run->host.hostname);
		return 0;
	}
	mv->calibrated = 1;
	struct ana_list rows = {.size = sizeof(struct ana_model_row)},
			pl = {.size = sizeof(struct ana_planner_row)};
	int oom = 0, rc = 0;
	for (int b = 0; b < run->nblocks && !rc && !oom; b++) {
		const struct col_block_run *br = &run->blocks[b];
		enum ops_group g = br->block->work.group;
		for (int v = 0; v < 2 && !rc && !oom; v++) {
			const struct col_variant_run *vr = &br->v[v];
			struct ana_model_row *r = add_row(&rows, b, v, -1);
			if (!r) {
				oom = 1;
				break;
			}
			struct ana_terms t;
			ana_terms(vr, &t);
			r->ran = r->counted = 1;
			ops_plan_describe(g, &vr->plan, r->plan, sizeof r->plan);
			r->model_ns = vr->model_ns;
			if ((rc = median_ns(vr, &r->measured_ns, err)))
				break;
			r->terms[ANA_T_OVERHEAD] = t.overhead;
			r->terms[ANA_T_COMPUTE] = t.compute;
			r->terms[ANA_T_SHARED] = t.shared;
			r->terms[ANA_T_GLOBAL] = t.global;
			r->terms[ANA_T_DMA] = t.dma;
			finish_row(r);
			for (size_t i = 0; vr->alt_measured_ns && i < vr->nalts; i++) {
				double m = vr->alt_measured_ns[i];
				if (!isfinite(m) || !(m > 0) || !vr->alts[i].fits)
					continue;
				if (!(r = add_row(&rows, b, v, (int)i))) {
					oom = 1;
					break;
				}
				r->ran = ops_plan_equal(&vr->alts[i].plan, &vr->plan);
				r->counted = !r->ran;
				ops_plan_describe(g, &vr->alts[i].plan, r->plan, sizeof r->plan);
				r->model_ns = vr->alts[i].model_ns;
				r->measured_ns = m;
				alt_terms(&p->envelope, br->block->work.dtype, &vr->alts[i].counters, r->terms);
				finish_row(r);
			}
			if (!oom)
				planner_row(br, b, v, &pl, &oom);
		}
	}
	mv->rows = rows.items;
	mv->nrows = rows.n;
	mv->planner = pl.items;
	mv->nplanner = pl.n;
	if (oom && !rc)
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
	if (rc)
		return rc;
	double *e = malloc((mv->nrows ? mv->nrows : 1) * sizeof *e);
	if (!e)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	size_t n = 0;
	for (size_t i = 0; i < mv->nrows; i++) {
		const struct ana_model_row *r = &mv->rows[i];
		if (!r->counted || !isfinite(r->ratio))
			continue;
		double a = fabs(r->ratio - 1.0);
		e[n++] = a;
		if (mv->worst < 0 || a > mv->worst_abs_error) {
			mv->worst_abs_error = a;
			mv->worst = (int)i;
		}
	}
	if (n) {
		qsort(e, n, sizeof *e, cmp_d);
		mv->median_abs_error = n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
		mv->trusted = mv->median_abs_error <= ana_check_rule(ANA_CHK_MODEL_ERROR)->limit;
	}
	free(e);
	return 0;
}

void ana_model_validation_release(struct ana_model_validation *mv)
{
	if (!mv)
		return;
	free(mv->rows);
	free(mv->planner);
	mv->rows = NULL;
	mv->planner = NULL;
	mv->nrows = mv->nplanner = 0;
}
