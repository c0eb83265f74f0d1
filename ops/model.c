/* ops/model.c: modelled device time of a launch from the hardware envelope and
 * what each core did (ops, bytes per level, transfers). Times in ns; 1 GB/s is
 * one byte per ns, 1 TOPS is 1000 ops per ns. */
#include "device_int.h"

/* Compute rate of one core for input dtype t, in ops/ns:
 *   rate = tops[t] * 1e12 * clock_scale / cores   ops/s
 * s8, u8 and s32 (the int8 accumulator) all run at the int8 rate. */
double ops_model_core_rate(const struct ops_envelope *env, enum ops_dtype t)
{
	double tops;

	switch (t) {
	case OPS_F16:
	case OPS_BF16:
		tops = env->tops[t];
		break;
	case OPS_S8:
	case OPS_U8:
	case OPS_S32:
		tops = env->tops[OPS_S8];
		break;
	case OPS_F32:
	default:
		tops = env->tops[OPS_F32];
		break;
	}
	return tops * 1e3 * env->clock_scale / env->cores;
}

/* Per core c of the launch (only the bandwidth terms are level-specific, as
 * in Timeloop's per-level bandwidth model, NVlabs, src/model/buffer.cpp):
 *   C_c = sum_t ops_c[t] / rate_t                      compute (MAC = 2 ops)
 *   S_c = shared_bytes_c / shared_bw                   on-chip, per core
 *   G_c = global_bytes_c / (global_bw / active cores)  off-chip, shared evenly
 *   D_c = transfers_c * dma_setup_ns / dma_engines     descriptor setup
 * double-buffered, transfers overlap compute (roofline, Williams, Waterman &
 * Patterson, CACM 2009):    T_c = max(C_c, S_c, G_c) + D_c
 * single-buffered, nothing overlaps (ECM without overlap, Hager & Treibig;
 * Stengel et al., ICS 2015): T_c = C_c + S_c + G_c + D_c
 * the launch ends with its slowest core:
 *   T = launch_overhead_us * 1000 + max_c T_c
 * The record keeps the terms of that slowest core (the first on a tie).
 * imbalance = max_c work_c / mean work over all the envelope's cores: an idle
 * core counts as zero work, so 1 tile on 4 cores is an imbalance of 4. */
void ops_model_launch(const struct ops_envelope *env, const struct ops_core_acc *acc,
		      int double_buffer, struct ops_launch_rec *rec)
{
	int active = 0, slow = -1;
	double best = -1.0;
	uint64_t max_work = 0, sum_work = 0;
	double cterm = 0, sterm = 0, gterm = 0, dterm = 0;

	for (int c = 0; c < env->cores; c++)
		active += acc[c].active != 0;
	rec->cores_used = active;
	rec->double_buffer = double_buffer != 0;
	rec->global_bytes = rec->shared_bytes = rec->transfers = rec->work = 0;
	const double gbw = env->global_bw_gbps / (active > 0 ? active : 1);

	for (int c = 0; c < env->cores; c++) {
		const struct ops_core_acc *a = &acc[c];
		double comp = 0.0;
		rec->global_bytes += a->global_bytes;
		rec->shared_bytes += a->shared_bytes;
		rec->transfers += a->transfers;
		rec->work += a->work;
		sum_work += a->work;
		if (a->work > max_work)
			max_work = a->work;
		if (!a->active)
			continue;
		for (int t = 0; t < OPS_NDTYPES; t++)
			if (a->ops[t])
				comp += (double)a->ops[t] / ops_model_core_rate(env, (enum ops_dtype)t);
		double s = (double)a->shared_bytes / env->shared_bw_gbps;
		double g = (double)a->global_bytes / gbw;
		double d = (double)a->transfers * env->dma_setup_ns / env->dma_engines;
		double tc;
		if (double_buffer) {
			tc = comp;
			if (s > tc)
				tc = s;
			if (g > tc)
				tc = g;
			tc += d;
		} else {
			tc = comp + s + g + d;
		}
		if (tc > best) {
			best = tc;
			slow = c;
			cterm = comp;
			sterm = s;
			gterm = g;
			dterm = d;
		}
	}
	rec->overhead_ns = env->launch_overhead_us * 1000.0;
	rec->compute_ns = cterm;
	rec->shared_ns = sterm;
	rec->global_ns = gterm;
	rec->dma_ns = dterm;
	rec->model_ns = rec->overhead_ns + (slow >= 0 ? best : 0.0);
	rec->imbalance = sum_work ? (double)max_work * env->cores / (double)sum_work : 1.0;
}

double ops_device_model_ns(const struct ops_device *dev)
{
	double t = 0.0;

	for (size_t i = 0; i < dev->nrecs; i++)
		t += dev->recs[i].model_ns;
	return t;
}
