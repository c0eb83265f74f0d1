/* ops/model.c: modelled device time of a launch from the hardware envelope and
 * what each core did (ops, bytes per level, transfers). Times in ns; 1 GB/s is
 * one byte per ns, 1 TOPS is 1000 ops per ns. */
#include "device_int.h"

#include <math.h>
#include <string.h>

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
 *         + vec_ops_c / vector_rate                    element-wise ops, when the
 *                                                      envelope has a vector unit
 *         + vec_half_ops_c / vector_half_rate          those on fp16/bf16 data, when
 *                                                      it prices them apart
 *   S_c = shared_bytes_c / shared_bw                   on-chip, per core;
 *       = Sd_c + Sc_c                                  moved by DMA + read and
 *                                                      written by compute
 *   G_c = global_bytes_c / (global_bw / active cores)  off-chip, shared evenly;
 *       = read_c / (read_bw / active) + written_c / (write_bw / active)
 *                                                      where the envelope prices
 *                                                      the directions apart (a
 *                                                      host calibration: its one-
 *                                                      pass kernels read GLOBAL
 *                                                      in place faster than a
 *                                                      staged copy moves it)
 *   D_c = transfers_c * dma_setup_ns / dma_engines     descriptor setup
 * With DMA engines beside compute (an accelerator envelope):
 *   double-buffered, transfers overlap compute (roofline, Williams, Waterman
 *   & Patterson, CACM 2009):  T_c = max(C_c, S_c, G_c) + D_c
 *   single-buffered, nothing overlaps (ECM without overlap, Hager & Treibig;
 *   Stengel et al., ICS 2015):  T_c = C_c + S_c + G_c + D_c
 * With dma_serial (a CPU host: its "DMA" is copies on the thread that
 * computes), a tile's transfer and its compute are phases one after the
 * other whatever the buffering, and each phase is bound by its slowest
 * resource: a copy streams GLOBAL and SHARED at once, compute streams its
 * operands from SHARED while it computes (ECM's overlap of in-core work with
 * the loads it issues, transfers between levels added):
 *   T_c = max(C_c, Sc_c) + max(G_c, Sd_c) + D_c
 * Why two forms: held against the host, C + S + G + D overestimated a
 * single-buffered conv 1.9x (it also serialises compute with its own operand
 * reads, which a core overlaps) and the roofline underestimated the
 * double-buffered permutes 1.5-2x (a single thread cannot overlap its copies
 * with its compute); the phased form fits both. Whether an accelerator's
 * compute overlaps its SHARED operand reads is not something this project
 * can measure, so accelerator envelopes keep the fully serialised form,
 * the upper bound METHODS prescribes.
 * A one-pass launch on such a host (element-wise tiles over contiguous data,
 * which the host computes straight from GLOBAL to GLOBAL: device_int.h,
 * ops_launch_one_pass) streams while it computes, as the roofline says:
 *   T_c = max(C_c, G_c / s_f) + D_c
 * (its SHARED traffic is the accelerator's, not the host's), where s_f is
 * the share of the plain stream's rate that family f's one-pass kernel
 * streams at, as calibrate measured it (envelope one_pass; 1 unset). Why:
 * the qgemm streaming B computes between its loads and so keeps fewer lines
 * in flight than a loop of loads; on the AVX-512 VM it streamed at 0.86 of
 * the plain read of the same bytes, with its in-L2 compute 0.6 of that time,
 * so max(C, G) priced it 12-16% short. ECM (Hager & Treibig) explains such
 * a gap by in-core work that does not overlap the transfers; the model
 * cannot split a kernel's compute into the parts ECM needs, so the host's
 * measured share stands in for them.
 * The launch ends with its slowest core:
 *   T = launch_overhead_us * 1000 + max_c T_c
 * The record keeps the terms of that slowest core (the first on a tie).
 * imbalance = max_c work_c / mean work over all the envelope's cores: an idle
 * core counts as zero work, so 1 tile on 4 cores is an imbalance of 4. */
void ops_model_prepare(const struct ops_envelope *env, struct ops_model_consts *mc)
{
	for (int t = 0; t < OPS_NDTYPES; t++)
		mc->rate[t] = ops_model_core_rate(env, (enum ops_dtype)t);
	mc->vec_rate = env->vector_tops * 1e3 * env->clock_scale / env->cores;
	mc->vec_half_rate = env->vector_half_tops * 1e3 * env->clock_scale / env->cores;
	for (int a = 0; a <= OPS_MAX_CORES; a++)
		mc->gbw[a] = env->global_bw_gbps / (a > 0 ? a : 1);
}

/* G_c of core a with active cores busy: the round trip's bandwidth gbw
 * (already shared) unless the envelope has a bandwidth per direction; a
 * direction it leaves unset costs the round trip's rate. */
static inline double global_term(const struct ops_envelope *env, const struct ops_core_acc *a,
				 double gbw, int active)
{
	if (!(env->global_read_bw_gbps > 0) && !(env->global_write_bw_gbps > 0))
		return (double)a->global_bytes / gbw;
	const double n = active > 0 ? active : 1;
	const double rbw = env->global_read_bw_gbps > 0 ? env->global_read_bw_gbps : env->global_bw_gbps;
	const double wbw = env->global_write_bw_gbps > 0 ? env->global_write_bw_gbps : env->global_bw_gbps;
	return (double)a->global_read_bytes / (rbw / n) +
	       (double)(a->global_bytes - a->global_read_bytes) / (wbw / n);
}

/* The terms of one core c and its time T_c, by the formulas above. */
struct core_terms {
	double comp, s, sd, g, d, t;
};

static inline void core_time(const struct ops_envelope *env, const struct ops_model_consts *mc,
			     const struct ops_core_acc *a, double gbw, int active, int double_buffer,
			     int one_pass, double share, const struct ops_kernel_cost *kc,
			     struct core_terms *ct)
{
	double comp = 0.0;

	/* the dtypes in increasing order, as a loop over all of them would add
	 * the non-zero terms (the others are all zero) */
	for (unsigned tm = a->dtypes; tm; tm &= tm - 1) {
		const int t = __builtin_ctz(tm);
		if (a->ops[t])
			comp += (double)a->ops[t] /
				(mc ? mc->rate[t] : ops_model_core_rate(env, (enum ops_dtype)t));
	}
	if (a->vec_ops)
		comp += (double)a->vec_ops /
			(mc ? mc->vec_rate : env->vector_tops * 1e3 * env->clock_scale / env->cores);
	if (a->vec_half_ops)
		comp += (double)a->vec_half_ops /
			(mc ? mc->vec_half_rate
			    : env->vector_half_tops * 1e3 * env->clock_scale / env->cores);
	ct->comp = comp;
	ct->s = (double)a->shared_bytes / env->shared_bw_gbps;
	ct->sd = (double)(a->shared_bytes - a->shared_compute_bytes) / env->shared_bw_gbps;
	ct->g = global_term(env, a, gbw, active);
	ct->d = (double)a->transfers * env->dma_setup_ns / env->dma_engines;
	if (kc) {
		/* a GPU family's measured cost: its body runs at `efficiency` of
		 * the probes' peaks, and each load from GLOBAL of the slowest core costs
		 * transfer_ns exposed (our kernels load a tile, wait for it and
		 * synchronise the block before the next) */
		ct->comp = comp *= kc->efficiency;
		ct->s *= kc->efficiency;
		ct->sd *= kc->efficiency;
		/* an SM pulls no more than its share of the HBM bandwidth
		 * however few SMs are busy: our kernels keep too few loads in
		 * flight per block for more (the qgemm plans with split_k 8,
		 * 64 SMs busy, streamed 0.16 TB/s on the H200) */
		ct->g = (double)a->global_bytes / (env->global_bw_gbps / env->cores) *
			kc->efficiency;
		/* the loads from GLOBAL a block waits for: not the stores it
		 * leaves behind, nor the split-K partial sums the model gathers on
		 * one core (on the GPU each block adds its own with atomics) */
		ct->d = (double)a->loads * kc->transfer_ns;
	}
	if (kc) {
		/* on a GPU other warps and blocks hide a block's loads whatever
		 * the plan's buffering (our kernels keep no second tile buffer:
		 * ops/cuda/cuda.h), so the body is the overlapped one; what is
		 * exposed is each transfer's transfer_ns */
		double tc = comp;
		if (ct->s > tc)
			tc = ct->s;
		if (ct->g > tc)
			tc = ct->g;
		ct->t = tc + ct->d;
	} else if (env->dma_serial && one_pass) {
		if (share > 0)
			ct->g /= share;
		ct->t = (comp > ct->g ? comp : ct->g) + ct->d;
	} else if (env->dma_serial) {
		const double sc = (double)a->shared_compute_bytes / env->shared_bw_gbps;
		ct->t = (comp > sc ? comp : sc) + (ct->g > ct->sd ? ct->g : ct->sd) + ct->d;
	} else if (double_buffer) {
		double tc = comp;
		if (ct->s > tc)
			tc = ct->s;
		if (ct->g > tc)
			tc = ct->g;
		ct->t = tc + ct->d;
	} else {
		ct->t = comp + ct->s + ct->g + ct->d;
	}
}

static void set_terms(struct ops_launch_rec *rec, const struct core_terms *ct)
{
	rec->compute_ns = ct->comp;
	rec->shared_ns = ct->s;
	rec->global_ns = ct->g;
	rec->dma_ns = ct->d;
	rec->shared_dma_ns = ct->sd;
}

/* The family's cost where the envelope has one (a GPU envelope), else NULL:
 * the host's model is unchanged. conv-gemm falls back to conv's cost. */
static const struct ops_kernel_cost *family_cost(const struct ops_envelope *env,
						 enum ops_kernel_class fam)
{
	if (fam == OPS_KC_CONV_GEMM && !(env->kern[fam].efficiency > 0))
		fam = OPS_KC_CONV;
	if ((unsigned)fam >= OPS_NKCLASSES || !(env->kern[fam].efficiency > 0))
		return NULL;
	return &env->kern[fam];
}

/* The share of the GLOBAL rates family fam's one-pass launch streams at
 * (ops.h, one_pass_share), or 0: the rates as they are. */
static double one_pass_share(const struct ops_envelope *env, enum ops_kernel_class fam)
{
	return (unsigned)fam < OPS_NKCLASSES ? env->one_pass_share[fam] : 0.0;
}

static double launch_cost_ns(const struct ops_envelope *env, int first)
{
	if (first && env->launch_first_us > 0)
		return env->launch_first_us * 1000.0;
	return env->launch_overhead_us * 1000.0;
}

void ops_model_launch(const struct ops_envelope *env, const struct ops_model_consts *mc,
		      const struct ops_core_acc *acc, const uint64_t *mask, int double_buffer,
		      int one_pass, enum ops_kernel_class fam, int first,
		      struct ops_launch_rec *rec)
{
	const struct ops_kernel_cost *kc = family_cost(env, fam);
	const double share = one_pass_share(env, fam);
	int active = 0, slow = -1;
	double best = -1.0;
	uint64_t max_work = 0, sum_work = 0, gsum = 0, ssum = 0, tsum = 0;
	uint64_t act[OPS_CORE_WORDS]; /* the active cores */
	struct core_terms terms = { 0, 0, 0, 0, 0, 0 };
	const int words = (env->cores + 63) / 64;

	/* one pass for the sums (the cores outside mask add zero), then the
	 * terms of the active cores only, in increasing order (a tie keeps the
	 * first core); only the words that hold the envelope's cores */
	for (int w = 0; w < words; w++) {
		uint64_t m = mask ? mask[w] : ~(uint64_t)0;
		if (env->cores - 64 * w < 64)
			m &= ((uint64_t)1 << (env->cores - 64 * w)) - 1;
		act[w] = 0;
		for (; m; m &= m - 1) {
			const int c = 64 * w + __builtin_ctzll(m);
			const struct ops_core_acc *a = &acc[c];
			gsum += a->global_bytes;
			ssum += a->shared_bytes;
			tsum += a->transfers;
			sum_work += a->work;
			if (a->work > max_work)
				max_work = a->work;
			if (a->active) {
				active++;
				act[w] |= (uint64_t)1 << (c & 63);
			}
		}
	}
	rec->cores_used = active;
	rec->double_buffer = double_buffer != 0;
	rec->one_pass = one_pass != 0;
	rec->zero = 0;
	rec->global_bytes = gsum;
	rec->shared_bytes = ssum;
	rec->transfers = tsum;
	rec->work = sum_work;
	const double gbw = mc ? mc->gbw[active] : env->global_bw_gbps / (active > 0 ? active : 1);

	for (int w = 0; w < words; w++)
		for (uint64_t m = act[w]; m; m &= m - 1) {
			struct core_terms ct;
			const int c = 64 * w + __builtin_ctzll(m);
			core_time(env, mc, &acc[c], gbw, active, double_buffer, one_pass, share, kc,
				  &ct);
			if (ct.t > best) {
				best = ct.t;
				slow = c;
				terms = ct;
			}
		}
	rec->overhead_ns = launch_cost_ns(env, first);
	rec->model_ns = rec->overhead_ns + (slow >= 0 ? best : 0.0);
	rec->imbalance = sum_work ? (double)max_work * env->cores / (double)sum_work : 1.0;
	set_terms(rec, &terms);
}

/* ops_model_launch for a launch whose only active core did a (the sums over
 * one core are its own values): the same expressions in the same order, so
 * the record is bit-identical, without the passes over the core mask. */
void ops_model_launch_one(const struct ops_envelope *env, const struct ops_model_consts *mc,
			  const struct ops_core_acc *a, int double_buffer, int one_pass,
			  enum ops_kernel_class fam, int first, struct ops_launch_rec *rec)
{
	struct core_terms ct;

	rec->cores_used = 1;
	rec->double_buffer = double_buffer != 0;
	rec->one_pass = one_pass != 0;
	rec->zero = 0;
	rec->global_bytes = a->global_bytes;
	rec->shared_bytes = a->shared_bytes;
	rec->transfers = a->transfers;
	rec->work = a->work;
	core_time(env, mc, a, mc ? mc->gbw[1] : env->global_bw_gbps, 1, double_buffer, one_pass,
		  one_pass_share(env, fam), family_cost(env, fam), &ct);
	rec->overhead_ns = launch_cost_ns(env, first);
	rec->model_ns = rec->overhead_ns + ct.t;
	rec->imbalance = a->work ? (double)a->work * env->cores / (double)a->work : 1.0;
	set_terms(rec, &ct);
}

/* Overlapped (double-buffered, DMA beside compute), compute and all SHARED
 * traffic overlap: max(C, S). Single-buffered on an accelerator, nothing
 * overlaps: C + S. On a serial-DMA host, compute overlaps its own operand
 * reads and the copy phase is the transfer plus what its SHARED side takes
 * beyond G: max(C, Sc) + max(0, Sd - G); a one-pass launch there streams
 * GLOBAL while it computes: C, overlapped with the transfer. D is added in
 * every case. */
double ops_model_onchip_ns(const struct ops_envelope *env, const struct ops_launch_rec *r,
			   int *overlapped)
{
	double onchip;

	*overlapped = env->dma_serial ? r->one_pass : r->double_buffer;
	if (env->dma_serial && r->one_pass)
		onchip = r->compute_ns;
	else if (env->dma_serial)
		onchip = fmax(r->compute_ns, r->shared_ns - r->shared_dma_ns) +
			 fmax(0.0, r->shared_dma_ns - r->global_ns);
	else if (r->double_buffer)
		onchip = fmax(r->compute_ns, r->shared_ns);
	else
		onchip = r->compute_ns + r->shared_ns;
	return onchip + r->dma_ns;
}

static const char *const family_names[OPS_NKCLASSES] = {"conv",	      "qgemm",
							 "permute",   "permute_rows",
							 "elementwise", "conv_gemm"};

const char *ops_kernel_class_name(enum ops_kernel_class f)
{
	return (unsigned)f < OPS_NKCLASSES ? family_names[f] : "?";
}

enum ops_kernel_class ops_kernel_class_of(const char *name, int alt)
{
	if (!strncmp(name, "conv2d", 6))
		return alt ? OPS_KC_CONV_GEMM : OPS_KC_CONV;
	if (!strncmp(name, "qgemm", 5))
		return OPS_KC_QGEMM;
	if (!strncmp(name, "permute", 7))
		return alt ? OPS_KC_PERMUTE_ROWS : OPS_KC_PERMUTE;
	return OPS_KC_ELEMENTWISE;
}

double ops_device_model_ns(const struct ops_device *dev)
{
	double t = 0.0;

	for (size_t i = 0; i < dev->nrecs; i++)
		t += dev->recs[i].model_ns;
	return t;
}
